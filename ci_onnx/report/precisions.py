"""The per-precision table: each derived precision of a cell beside its fp32 cell.

A row per (cell, precision) where the results hold more than one precision of the same cell (runner,
runtime, provider, opset, exporter, session options): the model file's size (from the export check's
``model_bytes``), the p50 latency at the largest batch both were timed at, and top-1 accuracy on the
labelled samples (the ``accuracy`` check), each against fp32; accuracy also against PyTorch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from ci_onnx.contracts.results import TargetResult
from ci_onnx.contracts.target import PRECISIONS
from ci_onnx.report.collect import Entry
from ci_onnx.report.gate import Gate
from ci_onnx.report.model import PrecisionRow


def _cell(entry: Entry) -> tuple[Any, ...]:
    return dataclasses.astuple(
        dataclasses.replace(entry.target, precision="fp32", runtime_spec="", expected_skip="")
    )


def _figure(r: TargetResult, check: str, key: str) -> float | None:
    c = r.check(check)
    value = c.figures.get(key) if c is not None else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _ratio(value: float | None, base: float | None) -> str:
    return f" ({value / base:.2f}× fp32)" if value is not None and base else ""


def _points(value: float | None, base: float | None) -> str:
    if value is None or base is None:
        return "—"
    d = value - base
    return f"{d:+.2f} pts".replace("-", "−")


def rows(entries: Sequence[Entry], gate: Gate | None = None) -> tuple[PrecisionRow, ...]:
    """A row per precision of each cell that has more than one; against ``gate``'s baseline, what
    moved (size and accuracy: latency has its own comparison, with a noise rule, in the serving diff)."""
    found = _rows(entries)
    b = gate.baseline if gate is not None else None
    if b is None:
        return found
    before = {r.target: r for r in _rows([Entry(x.target, x.status, x) for x in b.results.values()])}
    return tuple(dataclasses.replace(r, delta=_delta(before.get(r.target), r)) for r in found)


def _delta(was: PrecisionRow | None, now: PrecisionRow) -> str:
    if was is None:
        return "—"
    moved = [
        f"{what} {a} → {h}"
        for what, a, h in (("size", was.size, now.size), ("top-1", was.accuracy, now.accuracy))
        if a != h
    ]
    return "; ".join(moved) or "="


def _rows(entries: Sequence[Entry]) -> tuple[PrecisionRow, ...]:
    groups: dict[tuple[Any, ...], dict[str, TargetResult]] = {}
    for e in entries:
        if e.result is not None:
            groups.setdefault(_cell(e), {})[e.target.precision] = e.result
    out = []
    for by_precision in groups.values():
        if len(by_precision) < 2:
            continue
        fp32 = by_precision.get("fp32")
        base_size = _figure(fp32, "export", "model_bytes") if fp32 else None
        base_acc = _figure(fp32, "accuracy", "accuracy") if fp32 else None
        base_lat = {s.batch_size: s.p50_ms for s in fp32.observed.latency} if fp32 else {}
        for precision in PRECISIONS:
            r = by_precision.get(precision)
            if r is None:
                continue
            size = _figure(r, "export", "model_bytes")
            lat = {s.batch_size: s.p50_ms for s in r.observed.latency}
            common = sorted(set(lat) & set(base_lat)) or sorted(lat)
            latency = "—"
            if common:
                b = common[-1]
                latency = f"{lat[b]:.3g} ms at batch {b}" + _ratio(lat[b], base_lat.get(b))
            acc = _figure(r, "accuracy", "accuracy")
            out.append(
                PrecisionRow(
                    target=r.target.id,
                    precision=precision,
                    size="—" if size is None else f"{size / 1e6:.2f} MB" + _ratio(size, base_size),
                    latency=latency,
                    accuracy="—" if acc is None else f"{acc:.2f} %",
                    vs_fp32=_points(acc, base_acc) if precision != "fp32" else "",
                    vs_pytorch=_points(acc, _figure(r, "accuracy", "pytorch_accuracy")),
                    failed=r.status.failing,
                )
            )
    return tuple(out)
