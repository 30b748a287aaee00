"""`onnx-gate export`: one bundle per (opset, exporter, precision), checked."""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from ci_onnx.commands.options import config_option, only_option, out_dir_option, package_index


@click.command()
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
    from ci_onnx import plan as planning
    from ci_onnx.config import cascade
    from ci_onnx.export import cache, cache_key, parent

    cfgs = cascade.load_all(config_path)

    def plan_keys(patterns: Sequence[str]) -> Sequence[str]:
        return planning.select(planning.expand(cfgs, package_index(cfgs)), patterns).bundle_keys()

    every = [job for cfg in cfgs for job in parent.candidates(cfg, planning.onnx_opset(cfg))]
    precisions = sorted({p for cfg in cfgs for p in cfg.export.precisions})
    chosen = parent.select(every, only, plan_keys, precisions)
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
    export_all = functools.partial(parent.export_all, parallel=jobs or 0)
    outcomes = []
    for cfg, mine in per_model:
        if cache_dir is not None:
            outcomes += cache.export_cached(
                cfg, mine, out, log, cache_root=cache_dir, enabled=cfg.export.cache, export=export_all
            )
        else:
            outcomes += export_all(cfg, mine, out, log)
    click.echo(f"wrote {len(outcomes)} bundle(s) to {out}")
    click.get_current_context().exit(parent.exit_code(outcomes))


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
