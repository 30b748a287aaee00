"""The ``onnx-gate`` command: the only place that reads the process environment and exits.

Exit codes: 0 the gate passed, 1 the gate failed, 2 bad usage or configuration, 3 an internal or
environment error. ``onnx-gate --help`` imports neither torch nor onnxruntime: every command imports
what it needs when it runs.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import click

from ci_onnx import __version__
from ci_onnx.errors import EnvironmentProblem, GateError

EXIT_PASS, EXIT_FAIL, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


class GateGroup(click.Group):
    """Turns GateErrors into one line on stderr and their exit code; anything else is a bug."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except GateError as exc:
            click.echo(f"onnx-gate: error: {exc.message}", err=True)
            ctx.exit(exc.exit_code)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except KeyboardInterrupt:
            click.echo("onnx-gate: interrupted", err=True)
            ctx.exit(130)
        except Exception:
            traceback.print_exc()
            click.echo(
                "onnx-gate: internal error (a bug in onnx-gate, not in your model); please report it with "
                "the traceback above",
                err=True,
            )
            ctx.exit(EXIT_INTERNAL)


def _config_option(**kwargs: Any) -> Any:
    return click.option(
        "--config",
        "config_path",
        type=click.Path(path_type=Path, dir_okay=False),
        default="onnx-gate.yml",
        show_default=True,
        help="The onnx-gate.yml to read.",
        **kwargs,
    )


_only_option = click.option(
    "--only",
    multiple=True,
    metavar="GLOB",
    help="Keep targets whose id matches GLOB (repeatable), e.g. 'ort1.2*-cpu-*'.",
)


@click.group(cls=GateGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="onnx-gate")
def cli() -> None:
    """A CI gate for models that ship as ONNX.

    \b
    plan    expand the target matrix from onnx-gate.yml
    export  export the model once per opset and exporter, check it, write bundles
    verify  verify one target on its runtime: parity, decisions, batches, placement, latency
    report  aggregate results into the PR comment, job summary, check and exit code
    nightly keep one tracking issue per target broken by a new runtime release
    run     all of it on this machine, each runtime in its own environment
    init    write a starter onnx-gate.yml and GitHub workflows
    """


@cli.command()
@_config_option()
@_only_option
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json", "github"]),
    default="table",
    show_default=True,
    help="table for people; json for tools; github writes `matrix` (and more) to $GITHUB_OUTPUT.",
)
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False), help="Also write the plan JSON here.")
def plan(config_path: Path, only: Sequence[str], fmt: str, out: Path | None) -> None:
    """Expand the declared matrix into targets (expected skips keep their reason)."""
    from ci_onnx import config
    from ci_onnx import plan as planning
    from ci_onnx.resolve import PipIndex

    cfg = config.load(config_path)
    index = PipIndex(extra_index_urls=[cfg.targets.nightly_index] if cfg.targets.nightly_index else [])
    the_plan = planning.select(planning.expand(cfg, index), only)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(planning.to_json(the_plan))
    if fmt == "table":
        click.echo(planning.render_table(the_plan))
    elif fmt == "json":
        click.echo(planning.to_json(the_plan), nl=False)
    else:
        outputs = planning.github_outputs(the_plan)
        github_output = os.environ.get("GITHUB_OUTPUT")
        if github_output:
            planning.write_github_output(Path(github_output), outputs)
            click.echo(
                f"wrote {', '.join(outputs)} to $GITHUB_OUTPUT ({outputs['targets']} targets in "
                f"{outputs['matrices']} matrix(es))"
            )
        else:
            for key, value in outputs.items():
                click.echo(f"{key}={value}")


@cli.command()
@_config_option()
@_only_option
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    default="onnx-gate-out/bundles",
    show_default=True,
    help="Directory to write one bundle per (opset, exporter) into.",
)
def export(config_path: Path, only: Sequence[str], out: Path) -> None:
    """Export the model once per (opset, exporter) the plan needs, check it, and write bundles.

    \b
    Each bundle is exported in its own process and checked: export, control-flow, checker, opset,
    train-mode, dynamic-axes, outputs, graph, reference-parity (onnxruntime CPU against torch).
    Exit 0 when every check passed, 1 when one failed (the bundles are still written).
    """
    from ci_onnx import config
    from ci_onnx.export import runner

    cfg = config.load(config_path)
    onnx_opset = 0
    if cfg.onnx_only:
        from ci_onnx.export import onnx_only

        onnx_opset = onnx_only.file_opset(cfg)

    def plan_keys(patterns: Sequence[str]) -> Sequence[str]:
        from ci_onnx import plan as planning
        from ci_onnx.resolve import PipIndex

        opsets = (onnx_opset,) if cfg.onnx_only else None
        return planning.select(planning.expand(cfg, PipIndex(), opsets), patterns).bundle_keys()

    jobs = runner.select(runner.candidates(cfg, onnx_opset), only, plan_keys)
    outcomes = runner.export_all(cfg, jobs, out, log=lambda line: click.echo(line, err=True))
    click.echo(f"wrote {len(outcomes)} bundle(s) to {out}")
    click.get_current_context().exit(runner.exit_code(outcomes))


@cli.command()
@click.option(
    "--bundle",
    "bundle_dir",
    type=click.Path(path_type=Path, file_okay=False),
    required=True,
    help="A bundle written by `onnx-gate export`.",
)
@click.option("--target", "target_id", required=True, help="The target id, as `onnx-gate plan` lists it.")
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    default="onnx-gate-out",
    show_default=True,
    help="Writes results/<id>.json and junit/<id>.xml here.",
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="onnx-gate.yml, for budgets, strict_fallback, latency_runs and timeout (else the defaults).",
)
@click.option(
    "--python",
    "python",
    type=click.Path(path_type=Path, dir_okay=False),
    help="The interpreter of the environment to verify in (default: this one).",
)
@click.option(
    "--timeout", "timeout_s", type=click.FloatRange(min=1), help="Seconds before the runner is stopped."
)
def verify(
    bundle_dir: Path,
    target_id: str,
    out: Path,
    config_path: Path | None,
    python: Path | None,
    timeout_s: float | None,
) -> None:
    """Verify one target: provider, parity, decisions, batch sizes, placement, latency, memory."""
    from ci_onnx import config
    from ci_onnx.errors import UsageError
    from ci_onnx.target import Target
    from ci_onnx.verify import stage

    target = Target.from_id(target_id)
    if python is not None and not python.is_file():
        raise UsageError(f"--python {python}: no such interpreter")
    cfg = config.load(config_path) if config_path else None
    written = stage.verify(
        bundle_dir,
        target,
        out,
        stage.options_from(cfg, timeout_s=timeout_s),
        python=str(python) if python else sys.executable,
        base_env=dict(os.environ),
    )
    r = written.result
    click.echo(f"{target.id}: {r.status.value}{f' ({r.summary})' if r.summary else ''}")
    click.echo(f"  {written.result_path}\n  {written.junit_path}")
    click.get_current_context().exit(EXIT_FAIL if r.status.blocks else EXIT_PASS)


@cli.command()
@click.option(
    "--results",
    "results_dirs",
    type=click.Path(path_type=Path),
    multiple=True,
    required=True,
    help="Directories holding results/*.json (searched recursively); repeatable.",
)
@click.option(
    "--plan",
    "plan_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="The plan JSON, so that targets that never reported count as missing.",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    default="onnx-gate-out",
    show_default=True,
    help="Writes report.md (the full report) and summary.md here.",
)
@click.option(
    "--junit",
    "junit_paths",
    type=click.Path(path_type=Path, exists=True),
    multiple=True,
    help="JUnit XML from other tools (files or directories), shown in the report; failures block.",
)
@click.option(
    "--github-token",
    envvar="GITHUB_TOKEN",
    default="",
    show_default=False,
    help="Token for the PR comment and the check run [env: GITHUB_TOKEN]. Without one, nothing is sent.",
)
@click.option("--pr", "pr_number", type=int, help="The pull request to comment on (default: from the event).")
@click.option("--check-name", default="onnx-gate", show_default=True, help="Name of the check run / status.")
@click.option("--comment-key", default="", help="Tells apart the comments of several configs on one PR.")
@click.option(
    "--publish/--no-publish",
    default=True,
    show_default=True,
    help="Comment and set the check on GitHub when a token and repository are known.",
)
def report(
    results_dirs: Sequence[Path],
    plan_path: Path | None,
    out: Path,
    junit_paths: Sequence[Path],
    github_token: str,
    pr_number: int | None,
    check_name: str,
    comment_key: str,
    publish: bool,
) -> None:
    """Aggregate target results into one report: PR comment, job summary, check, exit code."""
    from ci_onnx.github import workflow
    from ci_onnx.github.client import Client
    from ci_onnx.github.context import from_env
    from ci_onnx.plan import read_plan
    from ci_onnx.report import junit_reader, limits, render, view
    from ci_onnx.report.collect import collect
    from ci_onnx.report.publish import publish as publish_report

    ctx = from_env(os.environ, token=github_token, pr_number=pr_number)
    the_plan = read_plan(plan_path) if plan_path else None
    collection = collect(results_dirs, the_plan)
    junit = junit_reader.read(junit_paths) if junit_paths else None
    report_file = out / "report.md"
    the_view = view.build(
        collection,
        commit=view.Commit(ctx.sha, ctx.commit_url),
        run_url=ctx.run_url,
        junit=junit,
        report_file=str(report_file),
    )
    out.mkdir(parents=True, exist_ok=True)
    report_file.write_text(render.render(the_view))
    summary = render.render_within(the_view, limits.JOB_SUMMARY)
    (out / "summary.md").write_text(summary)
    if ctx.step_summary:
        workflow.append_summary(ctx.step_summary, summary)

    def info(msg: str) -> None:
        click.echo(f"onnx-gate: {msg}")

    def warn(msg: str) -> None:
        click.echo(
            workflow.annotation("warning", msg, title="onnx-gate")
            if ctx.in_actions
            else f"onnx-gate: warning: {msg}"
        )

    if ctx.in_actions:
        for f in the_view.failures[:10]:  # GitHub shows at most 10 error annotations per step
            click.echo(workflow.annotation("error", f.reason, title=f"{f.target} {f.outcome}"))
    if publish and ctx.can_publish:
        client = Client(ctx.token, ctx.api_url, log=info)
        publish_report(
            the_view,
            ctx,
            client,
            info=info,
            warn=warn,
            check_name=check_name,
            config_path=collection.config_path or "onnx-gate.yml",
            comment_key=comment_key,
        )
    elif publish and ctx.in_actions:
        warn("no GITHUB_TOKEN (or --github-token): the report is in the job summary only")
    if ctx.output:
        workflow.set_outputs(
            ctx.output,
            {
                "verdict": "fail" if the_view.blocks else "pass",
                "failed": str(the_view.counts.blocking),
                "report": str(report_file),
            },
        )
    for f in the_view.failures[:20]:
        click.echo(f"  {f.icon} {f.target}: {f.reason}")
    if len(the_view.failures) > 20:
        click.echo(f"  … and {len(the_view.failures) - 20} more")
    mark = "❌" if the_view.blocks else "✅"
    click.echo(f"{mark} {the_view.headline}; the full report: {report_file}")
    if the_view.blocks:
        raise click.exceptions.Exit(EXIT_FAIL)


@cli.command()
@click.option(
    "--results",
    "results_dirs",
    type=click.Path(path_type=Path),
    multiple=True,
    required=True,
    help="Directories holding the night's results/*.json (searched recursively); repeatable.",
)
@click.option(
    "--plan",
    "plan_path",
    type=click.Path(path_type=Path, dir_okay=False),
    required=True,
    help="The night's plan JSON: it knows which spec (latest, latest-N, nightly) each target came from.",
)
@click.option(
    "--state",
    "state_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="A JSON file remembering the last release that passed per target family; read, then rewritten. "
    "Keep it between nightly runs (actions/cache).",
)
@click.option(
    "--bundles",
    type=click.Path(path_type=Path, file_okay=False),
    help="The night's bundles: verify releases between the last that passed and the first that failed "
    "(an environment per release). Without it, the search uses the night's results only.",
)
@_config_option()
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    default="onnx-gate-out",
    show_default=True,
    help="Writes nightly.md (the night's full report) here.",
)
@click.option(
    "--github-token",
    envvar="GITHUB_TOKEN",
    default="",
    help="A token that may write issues [env: GITHUB_TOKEN].",
)
@click.option(
    "--label",
    "labels",
    multiple=True,
    default=["onnx-gate-nightly"],
    show_default=True,
    help="Labels for new tracking issues (repeatable); issues are found by a hidden marker, not by label.",
)
@click.option("--date", "night_date", help="The night's date for the issue texts (default: today, UTC).")
@click.option(
    "--dry-run", is_flag=True, help="Say what would be opened, commented on and closed; send nothing."
)
@click.option(
    "--fail-on-broken",
    is_flag=True,
    help="Exit 1 when a target family is broken (by default the issue is the signal and the run exits 0).",
)
def nightly(
    results_dirs: Sequence[Path],
    plan_path: Path,
    state_file: Path | None,
    bundles: Path | None,
    config_path: Path,
    out: Path,
    github_token: str,
    labels: Sequence[str],
    night_date: str | None,
    dry_run: bool,
    fail_on_broken: bool,
) -> None:
    """Keep one tracking issue per broken target family after a nightly run against new releases.

    A family is a target without its resolved release (cpu-op17-dynamo@latest). Broken with no issue:
    open one, naming the first failing release; broken again: comment; green again: close it.
    """
    import datetime

    from ci_onnx import config
    from ci_onnx.envs import find_uv
    from ci_onnx.errors import UsageError
    from ci_onnx.github import workflow
    from ci_onnx.github.client import Client
    from ci_onnx.github.context import from_env
    from ci_onnx.nightly import command
    from ci_onnx.nightly.text import Night
    from ci_onnx.nightly.verifier import for_family
    from ci_onnx.plan import read_plan
    from ci_onnx.report.model import Commit
    from ci_onnx.resolve import PipIndex, releases_between

    ctx = from_env(os.environ, token=github_token)
    if not dry_run and not ctx.can_publish:
        raise UsageError(
            "nightly needs a token that may write issues (GITHUB_TOKEN or --github-token) and "
            "GITHUB_REPOSITORY; or pass --dry-run to see what it would do"
        )
    index = PipIndex()
    night = Night(
        date=night_date or datetime.datetime.now(datetime.UTC).date().isoformat(),
        run_url=ctx.run_url,
        commit=Commit(ctx.sha, ctx.commit_url),
    )
    from ci_onnx.verify.stage import options_from

    options = options_from(config.load(config_path) if config_path.is_file() else None)

    def info(msg: str) -> None:
        click.echo(f"onnx-gate: {msg}")

    client = None if dry_run else Client(ctx.token, ctx.api_url, log=info)
    outcome = command.run(
        results_dirs,
        read_plan(plan_path),
        night,
        releases=lambda good, bad, package: releases_between(good, bad, package, index),
        client=client,
        repo=ctx.repo,
        state_file=state_file,
        verifier_for=for_family(
            bundles, out / "nightly-bisect", _cache_dir(), options, dict(os.environ), uv=find_uv()
        ),
        labels=labels,
        info=info,
    )
    out.mkdir(parents=True, exist_ok=True)
    (out / "nightly.md").write_text(outcome.summary)
    if ctx.step_summary:
        workflow.append_summary(ctx.step_summary, outcome.summary)
    broken = outcome.decided.broken
    click.echo(
        f"{'❌' if broken else '✅'} {len(broken)} broken target famil{'y' if len(broken) == 1 else 'ies'}"
        + (f": {', '.join(broken)}" if broken else "")
    )
    if broken and fail_on_broken:
        raise click.exceptions.Exit(EXIT_FAIL)


@cli.command()
@click.option(
    "--config",
    "config_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="The onnx-gate.yml to read (default: ./onnx-gate.yml, else the bundled example with a demo matrix).",
)
@_only_option
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    default="onnx-gate-out",
    show_default=True,
    help="Writes bundles/, results/, junit/, plan.json and report.md here.",
)
@click.option(
    "--jobs", "-j", type=click.IntRange(min=1), help="Targets verified at once (default: the cores)."
)
@click.option(
    "--cache-dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Where runtime environments are kept [env: ONNX_GATE_CACHE; default: ~/.cache/onnx-gate].",
)
@click.pass_context
def run(
    ctx: click.Context,
    config_path: Path | None,
    only: Sequence[str],
    out: Path,
    jobs: int | None,
    cache_dir: Path | None,
) -> None:
    """Export, verify every target in its own environment, and report, on this machine."""
    from ci_onnx import config, localrun
    from ci_onnx.envs import find_uv
    from ci_onnx.resolve import PipIndex

    if config_path is None and Path(config.DEFAULT_NAME).is_file():
        config_path = Path(config.DEFAULT_NAME)
    if config_path is not None:
        cfg = config.load(config_path)
    else:
        import importlib.metadata
        import platform

        from ci_onnx.matrix import platform_tag

        try:
            installed = importlib.metadata.version("onnxruntime")
        except importlib.metadata.PackageNotFoundError:
            raise EnvironmentProblem(
                "the demo matrix verifies the onnxruntime installed beside onnx-gate, and there is none; "
                "pip install onnxruntime, or pass --config"
            ) from None
        example = config.load(localrun.example_config(Path(__file__).parent))
        cfg = localrun.demo_config(example, installed, platform_tag(sys.platform, platform.machine()))
        click.echo(
            f"no onnx-gate.yml here: running the bundled example {example.path} with the demo matrix\n"
        )
    options = localrun.RunOptions(
        out=out,
        cache_dir=cache_dir or _cache_dir(),
        jobs=jobs or localrun.default_jobs(localrun.cpu_count()),
        only=tuple(only),
        live=sys.stderr.isatty() and os.environ.get("TERM") != "dumb",
        uv=find_uv(),
        env=localrun.child_env(os.environ),
    )
    index = PipIndex(extra_index_urls=[cfg.targets.nightly_index] if cfg.targets.nightly_index else [])
    summary = localrun.run(cfg, index, options, click.echo)
    click.echo("\n" + localrun.terminal_table(out / "results", summary.plan))
    click.echo(
        f"\n== timings: export {summary.export_s:.1f} s, verify {summary.verify_s:.1f} s "
        f"({summary.envs_created} environment(s) created, the rest reused from {options.cache_dir})\n"
    )
    ctx.invoke(report, results_dirs=[out / "results"], plan_path=out / localrun.PLAN, out=out, publish=False)


def _cache_dir() -> Path:
    explicit = os.environ.get("ONNX_GATE_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "onnx-gate"


@cli.command()
@click.argument("directory", type=click.Path(path_type=Path, file_okay=False), default=".")
@click.option(
    "--action",
    default="onnx-gate/onnx-gate@v1",
    show_default=True,
    metavar="OWNER/REPO@REF",
    help="The action the workflows use (a fork, a pinned tag or commit).",
)
@click.option(
    "--fork-safe",
    is_flag=True,
    help="For pull requests from forks: an untrusted gate run plus a workflow_run job that comments.",
)
@click.option("--force", is_flag=True, help="Overwrite files that are already there.")
def init(directory: Path, action: str, fork_safe: bool, force: bool) -> None:
    """Write a commented onnx-gate.yml and starter GitHub workflows into DIRECTORY.

    \b
    onnx-gate.yml                          the configuration, every key commented
    .github/workflows/onnx-gate.yml        the pull-request gate (plan, export, verify, report)
    .github/workflows/onnx-gate-nightly.yml  the same plan nightly, against the newest runtimes
    With --fork-safe, onnx-gate.yml posts nothing and onnx-gate-comment.yml comments from workflow_run.
    """
    from ci_onnx import scaffold

    files = scaffold.starter_files(scaffold.Settings(action=action), fork_safe=fork_safe)
    for path in scaffold.write(directory, files, force=force):
        click.echo(f"wrote {path}")
    click.echo(
        "next: point model.factory in onnx-gate.yml at your model, run `onnx-gate plan`, commit, and make "
        "the check 'onnx-gate / report' required for pull requests"
    )


def main(argv: Sequence[str] | None = None) -> NoReturn:
    cli.main(args=list(argv) if argv is not None else None, prog_name="onnx-gate")
    sys.exit(EXIT_PASS)
