"""The bundle's sweep sets: the inputs of each timed sweep point and its reference outputs.

The points come from :func:`ci_onnx.export.sweep.timed_points` (verify.sweeps, else the sizes the
export's probes use), the inputs from :func:`ci_onnx.export.sweep.feeds_at` (the probes' own draws),
and the reference from whoever has one: PyTorch on the torch path, onnxruntime's CPU run with every
graph optimization off on the ONNX-only path. Each point is a directory in the test-data layout,
listed in the manifest's ``sweep_sets``; a point the reference itself cannot compute is listed with
the reason and no directory, so the target's check says which point and why.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ci_onnx.contracts.bundle import SweepSet, TensorSpec
from ci_onnx.contracts.errors import ConfigError
from ci_onnx.export import inputs, sweep, writer

Arrays = Mapping[str, Any]


def write(
    bundle_dir: Path,
    specs: Sequence[TensorSpec],
    dynamic_axes: Mapping[str, Mapping[str, str]],
    *,
    batch: int,
    dim_sizes: Mapping[str, int],
    seed: int,
    declared: Mapping[str, Sequence[int]],
    maxima: Mapping[str, int],
    reference: Callable[[Arrays], Arrays],
    who: str,
    keep_refused: bool = False,
    inconclusive: Mapping[tuple[str, int], str] | None = None,
) -> tuple[SweepSet, ...]:
    """Every timed point's directory (``reference`` computes its outputs; ``who`` names it).

    ``inconclusive``: the points (symbol, size) where the export's own probe, on these same values,
    found the graph and torch apart at the export size too (``dynamic-axes``' figures.sweep): there
    the values, not the size, are what differs, so the point is listed with that reason and judges
    no target (a probe must be well-conditioned before it convicts).

    ``keep_refused``: where the reference refuses a point, still write its inputs (no outputs), so
    each target shows whether its runtime refuses it too: an ONNX-only bundle's reference is the
    graph itself, and a graph that declares a dim symbolic and cannot run at a size of it is wrong."""
    known = set(sweep.symbols(dynamic_axes, specs)) - sweep.batch_symbols(specs, dynamic_axes)
    for name in declared:
        if name not in known:
            raise ConfigError(
                f"verify.sweeps.{name}: {name!r} is not a dynamic dim of the model's inputs other than the "
                f"batch axis (those: {', '.join(sorted(known)) or 'none'})"
            )
    out = []
    points = sweep.timed_points(specs, dynamic_axes, batch, dim_sizes, declared, maxima)
    for i, p in enumerate(points):
        feeds = sweep.feeds_at(specs, dynamic_axes, p.symbol, p.size, batch, dim_sizes, seed)
        count = inputs.count_of(feeds, specs)
        point = SweepSet("", p.symbol, p.size, count, p.export_size, p.declared)
        why = (inconclusive or {}).get((p.symbol, p.size))
        if why:
            out.append(dataclasses.replace(point, error=f"not a fair probe at {point.label}: {why}"))
            continue
        try:
            refs = reference(feeds)
        except Exception as exc:  # the reference itself cannot run there: the point says so
            text = " ".join(str(exc).split())[:300] or type(exc).__name__
            refused = dataclasses.replace(point, error=f"{who} fails at {point.label}: {text}")
            if keep_refused:
                refused = dataclasses.replace(refused, directory=_directory(i, p))
                writer.write_dir(bundle_dir, refused.directory, feeds, {})
            out.append(refused)
            continue
        directory = _directory(i, p)
        writer.write_dir(bundle_dir, directory, feeds, refs)
        out.append(dataclasses.replace(point, directory=directory))
    return tuple(out)


def _directory(index: int, p: sweep.Timed) -> str:
    return f"sweep_{index}_{re.sub(r'[^A-Za-z0-9]+', '_', p.symbol)}_{p.size}"


def inconclusive_points(dynamic_axes_check: Any) -> dict[tuple[str, int], str]:
    """The points the export's ``dynamic-axes`` probe found inconclusive (the same values differ at
    the export size too), from its ``figures.sweep``: (symbol, size) to what it recorded."""
    record = getattr(dynamic_axes_check, "figures", {}).get("sweep", {}) if dynamic_axes_check else {}
    out = {}
    for symbol, entry in record.items():
        for size, result in entry.get("results", {}).items():
            if str(result).startswith("inconclusive"):
                out[(symbol, int(size))] = (
                    f"the export's probe found the graph and torch apart on these values at the export "
                    f"size as well ({str(result).removeprefix('inconclusive: ')[:300]})"
                )
    return out
