"""`onnx-gate verify`: one target, or every target of one CI verify job."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ci_onnx.commands.options import default_cache_dir, finite, out_dir_option
from ci_onnx.contracts.errors import EXIT_FAIL, EXIT_PASS, UsageError

if TYPE_CHECKING:
    from ci_onnx.config import Config
    from ci_onnx.contracts.verify_options import VerifyOptions


def _ids(_ctx: click.Context, _param: click.Parameter, values: Sequence[str]) -> tuple[str, ...]:
    """Each --target value may hold several ids, comma-separated (a matrix entry's ``targets``)."""
    ids = tuple(dict.fromkeys(i.strip() for v in values for i in v.split(",") if i.strip()))
    if not ids:
        raise click.BadParameter("name at least one target id", param_hint="--target")
    return ids


@click.command()
@click.option(
    "--bundle",
    "bundle_dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="The bundle written by `onnx-gate export` that every target verifies.",
)
@click.option(
    "--bundles",
    "bundles_root",
    type=click.Path(path_type=Path, file_okay=False),
    help="Or: a folder of bundles, each target's its own (DIR/op17-dynamo, or "
    "DIR/onnx-gate-bundle-op17-dynamo as download-artifact lays several out).",
)
@click.option(
    "--target",
    "target_ids",
    multiple=True,
    required=True,
    callback=_ids,
    metavar="ID",
    help="A target id as `onnx-gate plan` lists it; repeatable, or several comma-separated.",
)
@out_dir_option("Writes results/<id>.json and junit/<id>.xml here.")
@click.option(
    "--config",
    "config_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="onnx-gate.yml, for budgets, strict_fallback, latency_runs and timeout (else the plan's).",
)
@click.option(
    "--plan",
    "plan_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="The plan JSON: the target as planned, and the config's verify settings and budgets (CI).",
)
@click.option(
    "--python",
    "python",
    type=click.Path(path_type=Path, dir_okay=False),
    metavar="PYTHON",
    help="The interpreter of the environment to verify in (default: this one where it holds the "
    "target's release, else the target's cached environment, made as `onnx-gate run` makes it).",
)
@click.option(
    "--timeout",
    "timeout_s",
    type=click.FloatRange(min=1, max=604_800),
    callback=finite,
    help="Seconds before the runner is stopped (at most a week).",
)
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1, max=256),
    help="Runner processes at once, for several targets (default: the cores).",
)
@click.option(
    "--baseline",
    metavar="DIR|github",
    help="The base commit's bundles, timed beside this one in the same process: a directory holding "
    "<bundle>/ (an earlier run's OUT/bundles), or `github`: the bundle artifact of the run of the pull "
    "request's base commit (needs actions: read).",
)
@click.option(
    "--github-token", envvar="GITHUB_TOKEN", default="", help="For --baseline github [env: GITHUB_TOKEN]."
)
def verify(
    bundle_dir: Path | None,
    bundles_root: Path | None,
    target_ids: tuple[str, ...],
    out: Path,
    config_path: Path | None,
    plan_path: Path | None,
    python: Path | None,
    timeout_s: float | None,
    jobs: int | None,
    baseline: str | None,
    github_token: str,
) -> None:
    """Verify targets: provider, parity, decisions, batch sizes, placement, latency, memory.

    \b
    Several targets (one CI job's matrix entry) share each environment: one runner process serves
    a share of them, and a crash or a hang is only its own target's error; each target writes its
    own result and JUnit. A target that cannot be verified at all gets an error result saying why.
    """
    from ci_onnx import matrix
    from ci_onnx import plan as planning
    from ci_onnx.config import cascade
    from ci_onnx.contracts import proc
    from ci_onnx.contracts.target import Target
    from ci_onnx.orchestration import localrun
    from ci_onnx.runners.base import Provisioning
    from ci_onnx.verify import job, stage

    if (bundle_dir is None) == (bundles_root is None):
        raise UsageError(
            "pass --bundle DIR (one bundle for every target) or --bundles DIR (a folder of them)"
        )
    if python is not None and not python.is_file():
        raise UsageError(f"--python {python}: no such interpreter")
    the_plan = planning.read_plan(plan_path) if plan_path else None
    models: dict[str, Config] = {}  # a models file: each target is judged by its own model's settings

    def config_of(target_id: str) -> Config | None:
        if config_path is None:
            return None
        model = the_plan.get(target_id).model if the_plan is not None else Target.from_id(target_id).model
        if model not in models:
            models[model] = cascade.load_one(config_path, model)
        return models[model]

    settled = [stage.settings(i, config_of(i), the_plan, timeout_s=timeout_s) for i in target_ids]
    targets = [t for t, _ in settled]
    by_model: dict[str, tuple[VerifyOptions, list[Target]]] = {}
    for t, options in settled:
        by_model.setdefault(t.model, (options, []))[1].append(t)
    if baseline:
        from ci_onnx.commands.paired import bundles_dir

        say = lambda m: click.echo(f"onnx-gate: {m}")  # noqa: E731
        one_each = {t.bundle_key: t for t in targets}.values()  # each bundle fetched once
        found_dirs = {bundles_dir(baseline, t, out, github_token, say) for t in one_each} - {""}
        paired = min(found_dirs, default="")
        by_model = {m: (dataclasses.replace(o, paired_bundles=paired), ts) for m, (o, ts) in by_model.items()}
    others = sorted({t.runner for t in targets if not matrix.runners()[t.runner].can.interpreter})
    if python is not None and others:
        raise UsageError(f"--python: the {others[0]} runner's targets do not run on Python")
    # how the results say to reproduce it: `onnx-gate run` where the config is known, else verify
    known = the_plan.config if the_plan is not None else str(config_path or "")
    how = Provisioning(default_cache_dir(), proc.child_environment(os.environ))  # no token reaches it
    found: dict[str, job.Found] = {}
    for options, mine in by_model.values():
        items = [
            (
                bundle_dir
                if bundle_dir is not None
                else job.bundle_for(bundles_root or Path(), t.bundle_key),
                t,
            )
            for t in mine
        ]
        found |= job.verify_all(
            items,
            out,
            options,
            how=how,
            python=str(python) if python else None,
            jobs=jobs or localrun.default_jobs(proc.cpu_count()),
            record_errors=len(targets) > 1,
            run_config=known or None,
        )
    alone = found[targets[0].id]
    if len(targets) == 1 and isinstance(alone, Exception):
        raise alone  # one target: its trouble is the command's (exit 2 or 3), no result
    blocks = False
    for t in targets:
        value = found[t.id]
        if isinstance(value, Exception):
            click.echo(f"{t.id}: error ({stage.describe_error(value)})")
            blocks = True
            continue
        r = value.result
        blocks = blocks or r.status.failing
        click.echo(f"{t.id}: {r.status.value}{f' ({r.summary})' if r.summary else ''}")
        if r.triage is not None:
            click.echo(f"  triage: {r.triage.summary or 'stopped: ' + r.triage.stopped}")
        click.echo(f"  {value.result_path}\n  {value.junit_path}")
    click.get_current_context().exit(EXIT_FAIL if blocks else EXIT_PASS)
