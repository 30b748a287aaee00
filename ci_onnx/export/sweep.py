"""The dynamic-dim sweep: every declared dynamic dim is probed by evidence, whether the trace warned or not.

A graph can keep an input axis symbolic and still be right only at the size it was traced at: a Python
loop over ``range(x.size(1))`` is unrolled without a TracerWarning, ``int(x.shape[0])`` bakes a size
into a Reshape or a constant. So for each declared symbol the sweep runs torch and the exported graph
(onnxruntime CPU) at the sizes :func:`sizes` chooses, one symbol at a time, the others at their export
size, and compares them (``probing``: a difference convicts only beyond torch's own on that probe).

:func:`sizes` is the one place the sizes are chosen; the check's figures record what was probed
(``figures["sweep"]``: per symbol, each size and what it showed). The timed sweep of every target
(:func:`timed_points`, the bundle's ``sweep_sets``) starts from the same sizes and the same draws
(:func:`feeds_at`), unless ``verify.sweeps`` names others.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from ci_onnx.contracts.bundle import TensorSpec, batch_symbol
from ci_onnx.contracts.results import CheckResult
from ci_onnx.contracts.target import Status
from ci_onnx.export import inputs
from ci_onnx.export.probing import Comparer, Outcome, Probe, Verdict


@dataclasses.dataclass(frozen=True)
class Point:
    symbol: str
    size: int
    probe: Probe
    same_values: Probe
    """The probe's values brought to the export size (cycled or cut along the symbol's axes): where the
    graph diverges on these too, the values are the cause, not the size."""


def sizes(export_size: int, maximum: int | None = None) -> tuple[int, ...]:
    """The sizes a dynamic dim is probed at: the smallest (1), an odd one, the export size, a larger one
    (``maximum`` where the dim declares one, else twice the export size); none past ``maximum``."""
    odd = export_size // 2 + 1
    odd += 1 - odd % 2
    if odd in (1, export_size):
        odd = export_size + 2 if export_size % 2 else export_size + 1
    large = maximum if maximum is not None else 2 * export_size
    chosen = dict.fromkeys((1, odd, export_size, large))
    return tuple(n for n in chosen if maximum is None or n <= maximum)


def batch_symbols(specs: Sequence[TensorSpec], dynamic_axes: Mapping[str, Mapping[str, str]]) -> set[str]:
    """The symbols of the inputs' batch axis: batch_sizes sweeps those, the timed sweep every other
    one. The shared batch symbol on whichever axis each input carries it; without one (``a: [M, 3]``,
    ``b: [N, 3]``), each input's symbolic axis 0, drawn at the sample count as the random inputs are."""
    axes = inputs.batch_axes(specs) or {s.name: 0 for s in specs if s.shape and isinstance(s.shape[0], str)}
    return {
        name
        for s in specs
        if s.name in axes
        for axis, name in dynamic_axes.get(s.name, {}).items()
        if axis == str(axes[s.name])
    }


@dataclasses.dataclass(frozen=True)
class Timed:
    """One point of the timed sweep."""

    symbol: str
    size: int
    export_size: int
    declared: bool


def timed_points(
    specs: Sequence[TensorSpec],
    dynamic_axes: Mapping[str, Mapping[str, str]],
    batch: int,
    dim_sizes: Mapping[str, int],
    declared: Mapping[str, Sequence[int]],
    maxima: Mapping[str, int],
) -> list[Timed]:
    """Every dynamic dim but the batch: at ``declared`` sizes (verify.sweeps) where given, else at
    :func:`sizes`; the export size included, so the profile has the traced point too."""
    now = export_sizes(specs, dynamic_axes, batch, dim_sizes)
    skip = batch_symbols(specs, dynamic_axes)
    out = []
    for symbol in symbols(dynamic_axes, specs):
        if symbol in skip or symbol not in now:
            continue
        chosen = declared[symbol] if symbol in declared else sizes(now[symbol], maxima.get(symbol))
        out += [Timed(symbol, n, now[symbol], symbol in declared) for n in sorted(set(chosen))]
    return out


def position_maxima(
    model: Any, specs: Sequence[TensorSpec], dynamic_axes: Mapping[str, Mapping[str, str]]
) -> dict[str, int]:
    """The model's position table (an ``nn.Embedding`` named like ``position``) as the bound of every
    dynamic dim of its integer inputs (token ids) but the batch: past it the model cannot index."""
    import torch

    tables = [
        m.num_embeddings
        for name, m in model.named_modules()
        if isinstance(m, torch.nn.Embedding) and "position" in name.lower()
    ]
    if not tables:
        return {}
    skip = batch_symbols(specs, dynamic_axes)
    integer = [s for s in specs if s.dtype.startswith(("int", "uint"))]
    dims = {n for s in integer for n in dynamic_axes.get(s.name, {}).values() if n not in skip}
    return {d: min(tables) for d in dims}


def feeds_at(
    specs: Sequence[TensorSpec],
    dynamic_axes: Mapping[str, Mapping[str, str]],
    symbol: str,
    size: int,
    batch: int,
    dim_sizes: Mapping[str, int],
    seed: int,
) -> dict[str, Any]:
    """The inputs of the point ``symbol = size``: the same draw the export's probe of it makes."""
    return _resized(specs, dynamic_axes, symbol, size, batch, dim_sizes, seed + 7919 + size)


def symbols(dynamic_axes: Mapping[str, Mapping[str, str]], specs: Sequence[TensorSpec]) -> list[str]:
    """The declared symbols of the inputs' dynamic axes, in declaration order."""
    names = {s.name for s in specs}
    return list(dict.fromkeys(n for k, axes in dynamic_axes.items() if k in names for n in axes.values()))


def export_sizes(
    specs: Sequence[TensorSpec],
    dynamic_axes: Mapping[str, Mapping[str, str]],
    batch: int,
    dim_sizes: Mapping[str, int],
) -> dict[str, int]:
    """Each input symbol's size in the export example."""
    out: dict[str, int] = {}
    symbol = batch_symbol(specs)
    for spec in specs:
        shape = inputs.concrete_shape(spec, batch, dim_sizes, symbol=symbol)
        for axis, name in dynamic_axes.get(spec.name, {}).items():
            if int(axis) < len(shape):
                out.setdefault(name, shape[int(axis)])
    return out


def points(
    specs: Sequence[TensorSpec],
    dynamic_axes: Mapping[str, Mapping[str, str]],
    batch: int,
    dim_sizes: Mapping[str, int],
    seed: int,
    maxima: Mapping[str, int] | None = None,
) -> list[Point]:
    """One probe per (symbol, size other than the export's), drawn like the declared inputs."""
    now = export_sizes(specs, dynamic_axes, batch, dim_sizes)
    out = []
    for symbol in symbols(dynamic_axes, specs):
        if symbol not in now:
            continue
        for size in sizes(now[symbol], (maxima or {}).get(symbol)):
            if size == now[symbol]:
                continue
            feeds = feeds_at(specs, dynamic_axes, symbol, size, batch, dim_sizes, seed)
            label = f"{symbol} = {size}"
            back = _refit(feeds, specs, dynamic_axes, symbol, now[symbol])
            same = Probe(f"the values of {label} at {symbol} = {now[symbol]}", back)
            out.append(Point(symbol, size, Probe(label, feeds), same))
    return out


def _refit(
    feeds: Mapping[str, Any],
    specs: Sequence[TensorSpec],
    dynamic_axes: Mapping[str, Mapping[str, str]],
    symbol: str,
    size: int,
) -> dict[str, Any]:
    """``feeds`` with every axis declared as ``symbol`` cycled or cut to ``size``."""
    import numpy as np

    out = dict(feeds)
    for spec in specs:
        for axis, name in dynamic_axes.get(spec.name, {}).items():
            arr = out[spec.name]
            if name == symbol and int(axis) < arr.ndim and arr.shape[int(axis)]:
                index = np.arange(size) % arr.shape[int(axis)]
                out[spec.name] = np.take(arr, index, axis=int(axis))
    return out


def _resized(
    specs: Sequence[TensorSpec],
    dynamic_axes: Mapping[str, Mapping[str, str]],
    symbol: str,
    size: int,
    batch: int,
    dim_sizes: Mapping[str, int],
    seed: int,
) -> dict[str, Any]:
    """Random inputs where every axis declared as ``symbol`` has ``size``; the others as in the example."""
    resized = []
    batch_of = batch_symbol(specs)
    for spec in specs:
        shape = list(inputs.concrete_shape(spec, batch, dim_sizes, symbol=batch_of))
        for axis, name in dynamic_axes.get(spec.name, {}).items():
            if name == symbol and int(axis) < len(shape):
                shape[int(axis)] = size
        resized.append(dataclasses.replace(spec, shape=tuple(shape)))
    return inputs.random_inputs(resized, batch, seed, {})


def check(
    comparer: Comparer,
    sweep: Sequence[Point],
    export_size: Mapping[str, int],
    graph_check: CheckResult,
    exporter: str,
    suspects: Sequence[str] = (),
    maxima: Mapping[str, int] | None = None,
) -> CheckResult:
    """``dynamic-axes`` with the sweep's evidence: failed at the first size where the graph diverges."""
    record: dict[str, dict[str, Any]] = {}
    for symbol in dict.fromkeys(p.symbol for p in sweep):
        traced = export_size[symbol]
        record[symbol] = {
            "export_size": traced,
            "sizes": list(sizes(traced, (maxima or {}).get(symbol))),
            "results": {str(traced): "the export size"},
        }
    failed: list[tuple[Point, Outcome]] = []
    agreed: dict[str, list[int]] = {}
    notes: list[str] = []
    for point in sweep:
        outcome = comparer.judge(point.probe)
        entry = record[point.symbol]
        result = outcome.verdict.value if not outcome.detail else f"{outcome.verdict.value}: {outcome.detail}"
        if outcome.verdict is Verdict.DIVERGES:
            again = comparer.judge(point.same_values)
            if again.verdict is Verdict.DIVERGES:  # the values, not the size: no evidence about the dim
                result = f"inconclusive: {outcome.detail}; so does {point.same_values.label}"
                notes.append(
                    f"the graph disagrees with torch at {point.probe.label} ({outcome.detail}), and as much "
                    f"on {point.same_values.label} ({again.detail}): inputs like these, not the size of "
                    f"{point.symbol}, are where the graph and torch differ (see figures.sweep)"
                )
            else:
                failed.append((point, outcome))
        elif outcome.verdict is Verdict.AGREES:
            agreed.setdefault(point.symbol, []).append(point.size)
        entry["results"][str(point.size)] = result
    figures = {**graph_check.figures, "sweep": record}
    if failed:
        point, outcome = failed[0]
        traced = export_size[point.symbol]
        more = f" (and at {', '.join(p.probe.label for p, _ in failed[1:4])})" if len(failed) > 1 else ""
        hint = f"; the trace warned at: {'; '.join(suspects[:3])}" if suspects else ""
        if exporter == "dynamo" and point.size == 1:
            hint += "; torch.export assumes a dynamic dim is at least 2 (its 0/1 specialisation)"
        return CheckResult(
            "dynamic-axes",
            Status.FAILED,
            f"{point.symbol} is symbolic in the graph, but the graph disagrees with torch at "
            f"{point.probe.label}{more} (exported at {point.symbol} = {traced}): {outcome.detail}; the graph "
            f"is right only at the traced size: a Python loop over {point.symbol} was unrolled or its size "
            "was made a constant (int(), .item(), a size kept in a Python list or tensor); compute with "
            f"tensor ops on the dim{', or use the dynamo exporter' if exporter == 'torchscript' else ''}"
            + hint,
            figures,
            warnings=(*graph_check.warnings, *notes),
        )
    swept = "; ".join(f"{s} = {', '.join(map(str, v))}" for s, v in agreed.items())
    unproved = [p.probe.label for p in sweep if p.size not in agreed.get(p.symbol, [])]
    message = graph_check.message
    if swept:
        message += f"; the graph matches torch at {swept}"
    if unproved:
        message += f"; no evidence at {', '.join(unproved)} (see figures.sweep)"
    return dataclasses.replace(
        graph_check, message=message, figures=figures, warnings=(*graph_check.warnings, *notes)
    )
