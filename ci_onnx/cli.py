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
from ci_onnx.errors import GateError, NotBuiltError

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
    the_plan = planning.select(planning.expand(cfg, PipIndex()), only)
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
def verify(bundle_dir: Path, target_id: str, out: Path) -> None:
    """Verify one target: provider, parity, decisions, batch sizes, placement, latency, memory."""
    raise NotBuiltError("`onnx-gate verify` is not built yet in this release")


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
    help="Writes report.md here.",
)
def report(results_dirs: Sequence[Path], plan_path: Path | None, out: Path) -> None:
    """Aggregate target results into one report: PR comment, job summary, check, exit code."""
    raise NotBuiltError("`onnx-gate report` is not built yet in this release")


@cli.command()
@_config_option()
@_only_option
@click.option(
    "--out", type=click.Path(path_type=Path, file_okay=False), default="onnx-gate-out", show_default=True
)
def run(config_path: Path, only: Sequence[str], out: Path) -> None:
    """Export, verify every target in its own environment, and report, on this machine."""
    raise NotBuiltError("`onnx-gate run` is not built yet in this release")


@cli.command()
@click.argument("directory", type=click.Path(path_type=Path, file_okay=False), default=".")
def init(directory: Path) -> None:
    """Write a commented onnx-gate.yml and starter GitHub workflows into DIRECTORY."""
    raise NotBuiltError("`onnx-gate init` is not built yet in this release")


def main(argv: Sequence[str] | None = None) -> NoReturn:
    cli.main(args=list(argv) if argv is not None else None, prog_name="onnx-gate")
    sys.exit(EXIT_PASS)
