"""`onnx-gate plan`: the declared matrix expanded into targets."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import click

from ci_onnx.commands.options import config_option, only_option, package_index


@click.command()
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
    from ci_onnx import plan as planning
    from ci_onnx.config import cascade
    from ci_onnx.export import factory
    from ci_onnx.orchestration import reuse

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
        from ci_onnx.contracts.errors import UsageError

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
        from ci_onnx.plan import cijobs

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
