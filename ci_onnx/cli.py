"""The ``onnx-gate`` command: the only place that reads the process environment and exits.

Exit codes (ci_onnx.errors declares them): 0 the gate passed, 1 the gate failed, 2 bad usage or
configuration, 3 an internal or environment error. ``onnx-gate --help`` imports neither torch nor
onnxruntime: every command imports what it needs when it runs.
"""

from __future__ import annotations

import functools
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import click

from ci_onnx import __version__
from ci_onnx.commands.nightly import nightly
from ci_onnx.commands.options import (
    config_option,
    only_option,
    out_dir_option,
    package_index,
)
from ci_onnx.commands.report import report
from ci_onnx.commands.reverify import reverify
from ci_onnx.commands.run import run
from ci_onnx.commands.triage import triage
from ci_onnx.commands.verify import verify
from ci_onnx.errors import EXIT_FAIL, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_PASS, EXIT_USAGE, GateError
from ci_onnx.scaffold import DEFAULT_ACTION

COMMANDS = {
    "plan": "Expand the target matrix from onnx-gate.yml.",
    "export": "Export the model once per opset and exporter, check it, write bundles.",
    "verify": "Verify one target on its runtime: parity, decisions, batches, placement, latency.",
    "triage": "Where a failing cell first diverges, whose fault it is, and a minimal reproduction.",
    "reverify": "Verify a fork's bundles again, with no token, for the trusted report.",
    "report": "Aggregate results into the PR comment, job summary, check and exit code.",
    "nightly": "Keep one tracking issue per target broken by a new runtime release.",
    "run": "All of it on this machine, each runtime in its own environment.",
    "init": "Write a starter onnx-gate.yml and GitHub workflows.",
}
"""``onnx-gate --help`` lists the commands once, in the order a run goes through them."""


class _Interrupted(BaseException):
    """A KeyboardInterrupt on its way out of click, which would turn it into exit code 1."""


class GateGroup(click.Group):
    """Turns GateErrors into one line on stderr and their exit code; anything else is a bug.

    Ctrl-C ends every child process at once and stays a KeyboardInterrupt for whoever called the
    command: :func:`main` turns it into exit code 130; a caller in the same process (a test through
    click's CliRunner, the action's entry point) is interrupted too instead of reading an exit code."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(self.commands, key=lambda name: list(COMMANDS).index(name) if name in COMMANDS else 99)

    def main(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().main(*args, **kwargs)
        except _Interrupted:
            raise KeyboardInterrupt from None

    def invoke(self, ctx: click.Context) -> Any:
        from ci_onnx import proc

        try:
            with proc.interruptible():
                return super().invoke(ctx)
        except GateError as exc:
            click.echo(f"onnx-gate: error: {exc.message}", err=True)
            ctx.exit(exc.exit_code)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except KeyboardInterrupt:
            raise _Interrupted from None
        except Exception:
            traceback.print_exc()
            click.echo(
                "onnx-gate: internal error (a bug in onnx-gate, not in your model); please report it with "
                "the traceback above",
                err=True,
            )
            ctx.exit(EXIT_INTERNAL)


EXIT_CODES = (
    (EXIT_PASS, "the gate passed"),
    (EXIT_FAIL, "the gate failed (a check failed, a target errored or is missing)"),
    (EXIT_USAGE, "bad usage or configuration (one line naming the file, line and key)"),
    (EXIT_INTERNAL, "an internal or environment error (a package index, a venv, a bug)"),
    (EXIT_INTERRUPTED, "interrupted (Ctrl-C); every child process is ended"),
)
"""What every command exits with, shown by ``--help`` (and the docs' command reference)."""


@click.group(
    cls=GateGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110},
    epilog="\b\nExit codes:\n" + "\n".join(f"  {code:<4} {meaning}" for code, meaning in EXIT_CODES),
)
@click.version_option(__version__, prog_name="onnx-gate")
def cli() -> None:
    """A CI gate for models that ship as ONNX: plan, export, verify and report in CI, or `run` it all
    on this machine."""


@cli.command()
@config_option()
@only_option
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json", "github"]),
    default="table",
    show_default=True,
    help="table for people; json for tools; github writes `matrix` (and more) to $GITHUB_OUTPUT.",
)
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False), help="Also write the plan JSON here.")
@click.option(
    "--explain",
    is_flag=True,
    help="Print each model's effective settings and the file and line that set each (or `default`).",
)
@click.option(
    "--baseline",
    metavar="DIR|github",
    help="The base commit's run (an earlier --out, or `github`: the pull request base's "
    "onnx-gate-baseline artifact): a model unchanged since then is neither exported nor verified.",
)
@click.option("--all", "run_all", is_flag=True, help="Plan every model, changed or not (with --baseline).")
@click.option(
    "--github-token", envvar="GITHUB_TOKEN", default="", help="For --baseline github [env: GITHUB_TOKEN]."
)
def plan(
    config_path: Path,
    only: Sequence[str],
    fmt: str,
    out: Path | None,
    explain: bool,
    baseline: str | None,
    run_all: bool,
    github_token: str,
) -> None:
    """Expand the declared matrix into targets (expected skips keep their reason)."""
    from ci_onnx import cascade, reuse
    from ci_onnx import plan as planning
    from ci_onnx.export import factory

    if explain:
        click.echo(cascade.explain(config_path))
        return
    cfgs = cascade.load_all(config_path)
    for cfg in cfgs:
        factory.check(cfg)  # a factory that is not there fails here, not at export
    index = package_index(cfgs)
    the_plan = reuse.fingerprinted(planning.select(planning.expand(cfgs, index), only), cfgs)
    if baseline and not run_all:
        from ci_onnx.commands.report import load_baseline

        dest = (out.parent if out else Path("onnx-gate-out")) / "plan-baseline"
        base = load_baseline(baseline, dest, github_token)
        if base is not None:
            the_plan = reuse.unchanged(the_plan, base, cfgs)
    if out:
        from ci_onnx.errors import UsageError

        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(planning.to_json(the_plan))
        except OSError as exc:
            raise UsageError(f"--out {out}: cannot write the plan there ({exc.strerror or exc})") from None
    if fmt == "table":
        click.echo(planning.render_table(the_plan))
    elif fmt == "json":
        click.echo(planning.to_json(the_plan), nl=False)
    else:
        from ci_onnx import cijobs

        outputs = cijobs.github_outputs(the_plan)
        github_output = os.environ.get("GITHUB_OUTPUT")
        if github_output:
            planning.write_github_output(Path(github_output), outputs)
            click.echo(
                f"wrote {', '.join(outputs)} to $GITHUB_OUTPUT ({outputs['targets']} targets in "
                f"{outputs['verify-jobs']} verify job(s))"
            )
        else:
            for key, value in outputs.items():
                click.echo(f"{key}={value}")


@cli.command()
@config_option()
@only_option
@out_dir_option("Directory to write one bundle per (opset, exporter) into.", default="onnx-gate-out/bundles")
@click.option(
    "--cache-dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Reuse bundles from this export cache when nothing that determines them changed, and store new "
    "ones there (the workflows keep it with actions/cache, keyed by --cache-key).",
)
@click.option(
    "--cache-key",
    "key_only",
    is_flag=True,
    help="Print the export cache key of the selected bundles and export nothing (in a workflow step, "
    "also the cache-key output).",
)
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1, max=256),
    help="Export processes at once (default: one per CPU, as many as the memory holds for the model).",
)
def export(
    config_path: Path,
    only: Sequence[str],
    out: Path,
    cache_dir: Path | None,
    key_only: bool,
    jobs: int | None,
) -> None:
    """Export the model once per (opset, exporter) the plan needs, check it, and write bundles.

    \b
    Each bundle is exported in its own process, as many at once as there are CPUs and memory for
    them, and checked: export, control-flow, checker, opset, train-mode, dynamic-axes, outputs,
    graph, reference-parity (onnxruntime CPU against torch), stateful.
    Exit 0 when every check passed, 1 when one failed (the bundles are still written).
    """
    from ci_onnx import cascade
    from ci_onnx import plan as planning
    from ci_onnx.export import cache, cache_key, runner

    cfgs = cascade.load_all(config_path)

    def plan_keys(patterns: Sequence[str]) -> Sequence[str]:
        return planning.select(planning.expand(cfgs, package_index(cfgs)), patterns).bundle_keys()

    every = [job for cfg in cfgs for job in runner.candidates(cfg, planning.onnx_opset(cfg))]
    precisions = sorted({p for cfg in cfgs for p in cfg.export.precisions})
    chosen = runner.select(every, only, plan_keys, precisions)
    # each model's jobs, in the order the config declares the models
    per_model = [(cfg, mine) for cfg in cfgs if (mine := [j for j in chosen if j.model == cfg.model.id])]
    if key_only:
        key = cache_key.slot(_export_cache_key(per_model, cache_dir, out), os.environ.get("GITHUB_SHA", ""))
        click.echo(key)
        github_output = os.environ.get("GITHUB_OUTPUT")
        if github_output:
            planning.write_github_output(Path(github_output), {"cache-key": key})
        return
    log = lambda line: click.echo(line, err=True)  # noqa: E731
    export_all = functools.partial(runner.export_all, parallel=jobs or 0)
    outcomes = []
    for cfg, mine in per_model:
        if cache_dir is not None:
            outcomes += cache.export_cached(
                cfg, mine, out, log, cache_root=cache_dir, enabled=cfg.export.cache, export=export_all
            )
        else:
            outcomes += export_all(cfg, mine, out, log)
    click.echo(f"wrote {len(outcomes)} bundle(s) to {out}")
    click.get_current_context().exit(runner.exit_code(outcomes))


def _export_cache_key(per_model: Sequence[tuple[Any, list[Any]]], cache_dir: Path | None, out: Path) -> str:
    """The actions/cache key of these bundles: their export cache keys in one digest; ``off`` or
    ``uncacheable`` where any model's bundles cannot be cached."""
    import hashlib

    from ci_onnx.export import cache_key

    keys = [
        cache_key.combined_key(cfg, mine, cache_root=cache_dir, out=out) if cfg.export.cache else "off"
        for cfg, mine in per_model
    ]
    for word in ("uncacheable", "off"):
        if word in keys:
            return word
    return keys[0] if len(keys) == 1 else hashlib.sha256(",".join(keys).encode()).hexdigest()[:32]


@cli.command()
@click.argument("directory", type=click.Path(path_type=Path, file_okay=False), default=".")
@click.option(
    "--action",
    default=DEFAULT_ACTION,
    show_default=True,
    metavar="OWNER/REPO@REF",
    help="The action the workflows use (a fork, a pinned tag or commit).",
)
@click.option(
    "--fork-safe",
    is_flag=True,
    help="For pull requests from forks: an untrusted gate run plus a workflow_run job that comments.",
)
@click.option(
    "--onnx",
    "onnx_file",
    metavar="MODEL.onnx",
    default="",
    help="The model is an ONNX file exported elsewhere: write the ONNX-only onnx-gate.yml for it.",
)
@click.option(
    "--android",
    is_flag=True,
    help="Add the android runner's cells (an x86_64 emulator over adb) and the verify-android job.",
)
@click.option(
    "--composite",
    is_flag=True,
    help="Every job through the composite action (ACTION/runner), which installs onnx-gate on the runner: "
    "no image to pull from ghcr.io.",
)
@click.option(
    "--models",
    "model_names",
    metavar="NAME,NAME…",
    default="",
    help="Several models in one gate: the `models:` form, one block per name (factory NAME/model.py:build).",
)
@click.option("--force", is_flag=True, help="Overwrite files that are already there.")
def init(
    directory: Path,
    action: str,
    fork_safe: bool,
    onnx_file: str,
    android: bool,
    composite: bool,
    model_names: str,
    force: bool,
) -> None:
    """Write a commented onnx-gate.yml and starter GitHub workflows into DIRECTORY.

    \b
    onnx-gate.yml                          the configuration, every key commented
    .github/workflows/onnx-gate.yml        the pull-request gate (plan, export, verify, report)
    .github/workflows/onnx-gate-nightly.yml  the same plan nightly, against the newest runtimes
    .gitignore                             onnx-gate-out/ added (what every command writes)
    With --fork-safe, onnx-gate.yml posts nothing and onnx-gate-comment.yml comments from workflow_run.
    """
    from ci_onnx import scaffold
    from ci_onnx.errors import UsageError

    if onnx_file and not (directory / onnx_file).is_file():
        raise UsageError(
            f"--onnx {onnx_file}: no such file in {directory} (onnx-gate.yml names it relative to "
            "its own directory)"
        )
    names = [n.strip() for n in model_names.split(",") if n.strip()]
    if names and onnx_file:
        raise UsageError("--models and --onnx: give one (several torch models, or one ONNX file)")
    from ci_onnx.cascade import name_pattern

    for name in names:
        if not name_pattern().match(name) or names.count(name) > 1:
            raise UsageError(
                f"--models: {name!r} cannot be a model's name here: names are unique, a letter then up "
                "to 39 letters, digits, - or _ (they are part of target ids)"
            )
    settings = scaffold.Settings(action=action, android=android, composite=composite)
    files = scaffold.starter_files(settings, fork_safe=fork_safe, onnx=onnx_file, models=names)
    for path in scaffold.write(directory, files, force=force):
        click.echo(f"wrote {path}")
    ignored = scaffold.ignore_output(directory)
    if ignored:
        click.echo(f"added {scaffold.IGNORED} to {ignored}")
    click.echo(
        (
            "next: optionally put test data under test_data/ (see model.test_data)"
            if onnx_file
            else "next: point each model's factory in onnx-gate.yml at its model"
            if names
            else "next: point model.factory in onnx-gate.yml at your model"
        )
        + ", run `onnx-gate plan`, commit, and make "
        f"the check '{scaffold.CHECK_NAME}' required for pull requests"
    )


for _command in (verify, reverify, report, nightly, run, triage):
    cli.add_command(_command)
for _name, _help in COMMANDS.items():
    cli.commands[_name].short_help = _help


def main(argv: Sequence[str] | None = None) -> NoReturn:
    from ci_onnx import proc

    proc.end_children_on_signals()  # a signal to onnx-gate ends its runners, browsers and adb calls
    try:
        cli.main(args=list(argv) if argv is not None else None, prog_name="onnx-gate")
    except KeyboardInterrupt:
        click.echo("onnx-gate: interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    sys.exit(EXIT_PASS)
