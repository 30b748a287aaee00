"""`onnx-gate run`: the whole matrix on this machine."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

import click

import ci_onnx
from ci_onnx.commands.options import default_cache_dir, only_option, out_dir_option, package_index
from ci_onnx.commands.report import report
from ci_onnx.errors import EnvironmentProblem


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
@click.pass_context
def run(
    ctx: click.Context,
    config_path: Path | None,
    only: Sequence[str],
    out: Path,
    jobs: int | None,
    cache_dir: Path | None,
    no_cache: bool,
) -> None:
    """Export, verify every target in its own environment, and report, on this machine."""
    from ci_onnx import config, localrun
    from ci_onnx.envs import find_uv

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
        example = config.load(localrun.example_config(Path(ci_onnx.__file__).parent))
        cfg = localrun.demo_config(example, installed, platform_tag(sys.platform, platform.machine()))
        click.echo(
            f"no onnx-gate.yml here: running the bundled example {example.path} with the demo matrix\n"
        )
    options = localrun.RunOptions(
        out=out,
        cache_dir=cache_dir or default_cache_dir(),
        jobs=jobs or localrun.default_jobs(localrun.cpu_count()),
        only=tuple(only),
        live=sys.stderr.isatty() and os.environ.get("TERM") != "dumb",
        uv=find_uv(),
        env=localrun.child_env(os.environ),
        export_cache=not no_cache,
        config_arg=None if config_path is not None else "",  # the demo plans without a config
    )
    index = package_index(cfg)
    summary = localrun.run(cfg, index, options, click.echo)
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
    ctx.invoke(report, results_dirs=[out / "results"], plan_path=out / localrun.PLAN, out=out, publish=False)
