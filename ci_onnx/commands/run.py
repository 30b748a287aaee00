"""`onnx-gate run`: the whole matrix on this machine."""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import click

import ci_onnx
from ci_onnx.commands.options import default_cache_dir, only_option, out_dir_option, package_index
from ci_onnx.commands.report import report
from ci_onnx.contracts.errors import EnvironmentProblem


@click.command()
@click.option(
    "--config",
    "config_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="The onnx-gate.yml to read (default: ./onnx-gate.yml, else the bundled example with a demo matrix).",
)
@only_option
@out_dir_option("Writes bundles/, results/, junit/, plan.json and report.md here.")
@click.option(
    "--jobs", "-j", type=click.IntRange(min=1, max=256), help="Targets verified at once (default: the cores)."
)
@click.option(
    "--cache-dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Where runtime environments are kept [env: ONNX_GATE_CACHE; default: ~/.cache/onnx-gate].",
)
@click.option(
    "--no-cache",
    is_flag=True,
    help="Export every bundle, even those an earlier run left in the cache (also: export.cache: false).",
)
@click.option(
    "--baseline",
    "baseline_dir",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    help="The --out of an earlier run of the base commit: report what changed against it (its bundles, "
    "where present, are timed beside this run's).",
)
@click.option(
    "--baseline-ref",
    metavar="REF",
    help="Run the base commit REF (main, HEAD~1, a sha) with the same plan in a temporary git worktree "
    "first, into OUT/baseline, then compare with it.",
)
@click.option(
    "--all",
    "run_all",
    is_flag=True,
    help="Run every model, even one unchanged since the baseline (which is otherwise not re-run).",
)
@click.pass_context
def run(
    ctx: click.Context,
    config_path: Path | None,
    only: Sequence[str],
    out: Path,
    jobs: int | None,
    cache_dir: Path | None,
    no_cache: bool,
    baseline_dir: Path | None,
    baseline_ref: str | None,
    run_all: bool = False,
) -> None:
    """Export, verify every target in its own environment, and report, on this machine."""
    from ci_onnx import config
    from ci_onnx.config import cascade
    from ci_onnx.contracts import proc
    from ci_onnx.contracts.errors import UsageError
    from ci_onnx.host.envs import find_uv
    from ci_onnx.orchestration import baseref, localrun

    if config_path is None and Path(config.DEFAULT_NAME).is_file():
        config_path = Path(config.DEFAULT_NAME)
    if config_path is not None:
        cfgs = cascade.load_all(config_path)
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
        example = config.load(localrun.example_config(Path(ci_onnx.__file__).parent))
        cfgs = (localrun.demo_config(example, installed, platform_tag(sys.platform, platform.machine())),)
        click.echo(
            f"no onnx-gate.yml here: running the bundled example {example.path} with the demo matrix\n"
        )
    options = localrun.RunOptions(
        out=out,
        cache_dir=cache_dir or default_cache_dir(),
        jobs=jobs or localrun.default_jobs(proc.cpu_count()),
        only=tuple(only),
        live=sys.stderr.isatty() and os.environ.get("TERM") != "dumb",
        uv=find_uv(),
        env=localrun.child_env(os.environ),
        export_cache=not no_cache,
        config_arg=None if config_path is not None else "",  # the demo plans without a config
        run_all=run_all,
    )
    index = package_index(cfgs)
    if baseline_dir and baseline_ref:
        raise UsageError("--baseline and --baseline-ref: give one (a directory, or a commit to run)")
    source = f"--baseline {baseline_dir}" if baseline_dir else ""
    if baseline_ref:
        if config_path is None:
            raise UsageError("--baseline-ref needs an onnx-gate.yml in a git checkout (--config)")
        root, sha = baseref.resolve(baseline_ref, config_path, options.env)
        baseline_dir = out / "baseline"
        source = f"--baseline-ref {baseline_ref}, run in a temporary worktree"
        click.echo(f"== baseline: {baseline_ref} ({sha[:7]}) with the same plan, into {baseline_dir}\n")
        with baseref.worktree(root, sha, options.env) as tree:
            base_cfgs = baseref.base_configs(cfgs, root, tree, baseline_ref)
            localrun.run(base_cfgs, index, dataclasses.replace(options, out=baseline_dir), click.echo)
        _describe(baseline_dir, sha)
        click.echo(f"\n== head: {config_path}\n")
    if baseline_dir is not None:
        from ci_onnx.report import baseline

        base = baseline.load(baseline_dir, source=source)
        options = dataclasses.replace(options, paired_bundles=baseline_dir / localrun.BUNDLES, base=base)
    summary = localrun.run(cfgs, index, options, click.echo)
    click.echo("\n" + localrun.terminal_table(out / "results", summary.plan))
    click.echo(
        f"\n== timings: export {summary.export_s:.1f} s, verify {summary.verify_s:.1f} s "
        f"({summary.envs_created} environment(s) created, the rest reused from {options.cache_dir})"
        + (
            f"; {summary.bundles_reused} bundle(s) reused from the export cache"
            if summary.bundles_reused
            else ""
        )
        + "\n"
    )
    ctx.invoke(
        report,
        results_dirs=[out / "results"],
        plan_path=out / localrun.PLAN,
        out=out,
        publish=False,
        baseline_dir=baseline_dir,
        baseline_source=source,
        commit=baseref.commit_of(cfgs[0].path.parent, options.env),
    )


def _describe(out: Path, commit: str) -> None:
    """``baseline.json``: the commit and bundles of this --out, for a later ``--baseline``."""
    from ci_onnx.report import baseline
    from ci_onnx.report.collect import collect

    baseline.write_meta(out, commit, baseline.bundles_of(collect([out / "results"])))
