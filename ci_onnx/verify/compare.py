"""The verdict logic as small pure functions: parity, decisions, fallback budget.

Parity judges as onnx's backend test runner does: shapes and dtypes equal, strings exactly, numbers
elementwise |got − ref| ≤ atol + rtol·|ref| (np.testing.assert_allclose), where NaN equals NaN and an
infinity equals the same infinity; anything else meeting a NaN or an infinity is out of tolerance.
bfloat16 gets at least two bfloat16 ULPs of rtol (2^-6), float8 and the other narrow types are
compared by decoded value, complex numbers by real and imaginary parts. Sequences compare element by
element, maps key by key, optionals by presence then value. Figures stay finite so results remain
plain JSON.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ci_onnx.contracts.bundle import Tolerance
from ci_onnx.contracts.results import SQNR_CAP_DB, DecisionStats, OutputParity, PlacedNode, Placement
from ci_onnx.contracts.target import Status

CPU = "CPUExecutionProvider"


def parity(output: str, got: np.ndarray, ref: np.ndarray, tol: Tolerance) -> OutputParity:
    """Elementwise |got − ref| ≤ atol + rtol·|ref|, with max abs, max rel and the count out of tolerance.

    max_rel is taken over elements whose reference is nonzero; both maxima over finite pairs only.
    """
    if got.shape != ref.shape:
        return OutputParity(
            output, math.nan, math.nan, int(ref.size), int(ref.size), tol.atol, tol.rtol,
            shape_mismatch=f"got shape {list(got.shape)}, the reference has {list(ref.shape)}",
        )  # fmt: skip
    g = np.asarray(got, dtype=np.float64)
    r = np.asarray(ref, dtype=np.float64)
    finite = np.isfinite(g) & np.isfinite(r)
    same_special = (np.isnan(g) & np.isnan(r)) | (np.isinf(g) & np.isinf(r) & (g == r))
    special_bad = ~finite & ~same_special
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.where(finite, np.abs(g - r), 0.0)
        finite_bad = finite & (diff > tol.atol + tol.rtol * np.abs(np.where(finite, r, 0.0)))
        nonzero = finite & (r != 0)
        rel = np.where(nonzero, diff / np.where(nonzero, np.abs(r), 1.0), 0.0)
        allowed = tol.atol + tol.rtol * np.abs(np.where(finite, r, 0.0))
        judged = finite & (allowed > 0)
        share = np.where(judged, diff / np.where(judged, allowed, 1.0), 0.0)
    return OutputParity(
        output=output,
        max_abs=_finite_max(diff),
        max_rel=_finite_max(rel),
        out_of_tolerance=int(finite_bad.sum() + special_bad.sum()),
        elements=int(r.size),
        atol=tol.atol,
        rtol=tol.rtol,
        nonfinite_mismatches=int(special_bad.sum()),
        worst_share=_finite_max(share) if judged.any() else None,
    )


BF16_RTOL = 2.0**-6


def values(output: str, got: Any, ref: Any, tol: Tolerance) -> OutputParity:
    """:func:`parity` for any ONNX value: a tensor, a sequence (list), a map (dict) or an optional."""
    if ref is None or got is None:
        if ref is None and got is None:
            return OutputParity(output, 0.0, 0.0, 0, 0, tol.atol, tol.rtol)
        what = "no value (an empty optional)" if got is None else "a value"
        other = "none" if ref is None else "one"
        return _mismatch(output, ref, tol, f"got {what}, the reference has {other}")
    if isinstance(ref, (list, tuple)) or isinstance(got, (list, tuple)):
        if not (isinstance(ref, (list, tuple)) and isinstance(got, (list, tuple))):
            return _mismatch(output, ref, tol, "got a tensor where the reference is a sequence, or back")
        if len(got) != len(ref):
            return _mismatch(output, ref, tol, f"got a sequence of {len(got)}, the reference has {len(ref)}")
        return _merged(output, [values(output, g, r, tol) for g, r in zip(got, ref, strict=True)], tol)
    if isinstance(ref, dict) or isinstance(got, dict):
        if not (isinstance(ref, dict) and isinstance(got, dict)) or set(got) != set(ref):
            return _mismatch(output, ref, tol, "got a map with other keys than the reference's")
        return _merged(output, [values(output, got[k], ref[k], tol) for k in ref], tol)
    g, r = np.asarray(got), np.asarray(ref)
    if g.shape != r.shape:
        return _mismatch(output, r, tol, f"got shape {list(g.shape)}, the reference has {list(r.shape)}")
    if g.dtype != r.dtype:
        return _mismatch(output, r, tol, f"got dtype {g.dtype}, the reference has {r.dtype}")
    if r.dtype.kind in "OUS":
        bad = int(np.sum(g.astype(str) != r.astype(str))) if r.size else 0
        return OutputParity(output, 0.0, 0.0, bad, int(r.size), tol.atol, tol.rtol)
    if r.dtype.kind == "c":
        parts = [parity(output, g.real, r.real, tol), parity(output, g.imag, r.imag, tol)]
        return dataclasses.replace(_merged(output, parts, tol), elements=int(r.size))
    if r.dtype.name == "bfloat16":
        tol = dataclasses.replace(tol, rtol=max(tol.rtol, BF16_RTOL))
    if r.dtype.kind not in "biuf" or r.dtype.type.__module__ == "ml_dtypes":  # compare decoded values
        g, r = g.astype(np.float64), r.astype(np.float64)
    return parity(output, g, r, tol)


def error_stats(pairs: list[tuple[np.ndarray, np.ndarray]]) -> tuple[float | None, float | None]:
    """(SQNR in dB, cosine similarity) of got against ref over the finite elements of every pair.

    The figures that fit a quantized output: max abs is set by one element, these by all of them.
    None for what cannot be computed (no finite numeric element, a zero reference signal).
    """
    gs, rs = [], []
    for got, ref in pairs:
        if got.shape != ref.shape or got.dtype.kind not in "biuf" or ref.dtype.kind not in "biuf":
            continue
        g = np.asarray(got, dtype=np.float64).reshape(-1)
        r = np.asarray(ref, dtype=np.float64).reshape(-1)
        keep = np.isfinite(g) & np.isfinite(r)
        gs.append(g[keep])
        rs.append(r[keep])
    if not gs or not sum(g.size for g in gs):
        return None, None
    g, r = np.concatenate(gs), np.concatenate(rs)
    signal, noise = float(np.dot(r, r)), float(np.dot(g - r, g - r))
    if noise == 0.0:
        sqnr: float | None = SQNR_CAP_DB
    elif signal == 0.0:
        sqnr = None
    else:
        sqnr = min(SQNR_CAP_DB, 10.0 * math.log10(signal / noise))
    norms = math.sqrt(float(np.dot(g, g))) * math.sqrt(signal)
    if norms == 0.0:
        cosine: float | None = 1.0 if noise == 0.0 else None
    else:
        cosine = max(-1.0, min(1.0, float(np.dot(g, r)) / norms))
    return sqnr, cosine


def _mismatch(output: str, ref: Any, tol: Tolerance, why: str) -> OutputParity:
    size = int(np.asarray(ref).size) if isinstance(ref, np.ndarray) else 1
    return OutputParity(output, math.nan, math.nan, size, size, tol.atol, tol.rtol, shape_mismatch=why)


def _merged(output: str, parts: list[OutputParity], tol: Tolerance) -> OutputParity:
    finite = [p for p in parts if not math.isnan(p.max_abs)]
    return OutputParity(
        output=output,
        max_abs=max((p.max_abs for p in finite), default=0.0),
        max_rel=max((p.max_rel for p in finite), default=0.0),
        out_of_tolerance=sum(p.out_of_tolerance for p in parts),
        elements=sum(p.elements for p in parts),
        atol=tol.atol,
        rtol=tol.rtol,
        nonfinite_mismatches=sum(p.nonfinite_mismatches for p in parts),
        shape_mismatch="; ".join(p.shape_mismatch for p in parts if p.shape_mismatch),
    )


def describe(p: OutputParity) -> str:
    nonfinite = f" ({p.nonfinite_mismatches} NaN/Inf mismatches)" if p.nonfinite_mismatches else ""
    return (
        f"{p.out_of_tolerance} of {p.elements} elements out of tolerance{nonfinite}; "
        f"max abs {p.max_abs:.3g}, max rel {p.max_rel:.3g} (atol {p.atol:g}, rtol {p.rtol:g})"
        + (f"; SQNR {p.sqnr_db:.1f} dB" if p.sqnr_db is not None else "")
        + (f", cosine {p.cosine:.6f}" if p.cosine is not None else "")
    )


def _finite_max(values: np.ndarray) -> float:
    if values.size == 0:
        return 0.0
    m = float(np.max(values))
    return m if math.isfinite(m) else float(np.finfo(np.float64).max)


def top_k(scores: np.ndarray, k: int) -> list[frozenset[int]]:
    """The top-k class indices along the last axis, one set per row (rows = all leading axes)."""
    rows = np.asarray(scores, dtype=np.float64).reshape(-1, scores.shape[-1] if scores.ndim else 1)
    k = min(k, rows.shape[1])
    order = np.argsort(-rows, axis=1, kind="stable")[:, :k]
    return [frozenset(int(i) for i in row) for row in order]


def decisions(output: str, got: np.ndarray, ref: np.ndarray, k: int) -> DecisionStats:
    """How many rows changed their top-k set. A row that gained a NaN counts as changed."""
    if got.shape != ref.shape:
        rows = int(np.prod(ref.shape[:-1])) if ref.ndim else 1
        return DecisionStats(output, k, rows, rows)
    got_sets, ref_sets = top_k(got, k), top_k(ref, k)
    width = ref.shape[-1] if ref.ndim else 1
    got_nan = _nan_rows(got, width)
    ref_nan = _nan_rows(ref, width)
    changed = sum(
        1 for g, r, gn, rn in zip(got_sets, ref_sets, got_nan, ref_nan, strict=True) if g != r or gn != rn
    )
    return DecisionStats(output, k, changed, len(ref_sets))


def _nan_rows(values: np.ndarray, width: int) -> list[bool]:
    rows = np.isnan(np.asarray(values, dtype=np.float64).reshape(-1, width))
    return [bool(row.any()) for row in rows]


def merge_decisions(parts: list[DecisionStats]) -> DecisionStats | None:
    if not parts:
        return None
    return DecisionStats(
        parts[0].output, parts[0].top_k, sum(p.changed for p in parts), sum(p.total for p in parts)
    )


SHAPE_OPS = frozenset(
    {
        "Shape", "Size", "Gather", "Unsqueeze", "Squeeze", "Concat", "Slice", "Reshape", "Expand",
        "Cast", "Range", "ConstantOfShape", "Constant", "Equal", "Where", "Identity", "Flatten",
    }
)  # fmt: skip
"""Ops that mostly compute shapes and indices (int64): onnxruntime keeps many of them on the CPU on
purpose, so without node times they are listed after the others."""


def _by_op(nodes: Sequence[PlacedNode]) -> str:
    """`` (by op: IsNaN 6, Shape 13, …)``: the fallen-back nodes counted per op type, the ops that are
    more than shape arithmetic first; "" for a single op type."""
    counts: dict[str, int] = {}
    for n in nodes:
        counts[n.op_type] = counts.get(n.op_type, 0) + 1
    if len(counts) < 2:
        return ""
    ranked = sorted(counts.items(), key=lambda kv: (kv[0] in SHAPE_OPS, -kv[1], kv[0]))
    text = ", ".join(f"{op} {k}" for op, k in ranked[:8]) + (", …" if len(ranked) > 8 else "")
    return f" (by op: {text})"


def fallback_verdict(
    placement: Placement, *, accelerator: bool, max_time_share: float, strict: bool
) -> tuple[Status, str]:
    """Whether the CPU's share of node time stays within budget on an accelerator target."""
    counts = ", ".join(f"{p}: {n}" for p, n in placement.nodes_by_provider.items())
    if not accelerator:
        return Status.PASSED, f"nodes per provider: {counts} (the CPU is this target's provider)"
    if sum(placement.time_us_by_provider.values()) > 0:
        share, of_what = placement.cpu_time_share, "node time"
    else:  # the verbose log has no timings: judge by the share of nodes
        nodes = sum(placement.nodes_by_provider.values())
        share = placement.nodes_by_provider.get(CPU, 0) / nodes if nodes else 0.0
        of_what = "nodes (no timings)"
    fell = placement.fallback_nodes
    if of_what != "node time":  # no times to rank by: the ops that are more than shape arithmetic first
        fell = tuple(sorted(fell, key=lambda n: n.op_type in SHAPE_OPS))
    listed = ", ".join(f"{n.name} ({n.op_type})" for n in fell[:10]) + (" …" if len(fell) > 10 else "")
    where = "no node fell back to CPU"
    if fell:
        where = f"{len(fell)} node(s) fell back to CPU{_by_op(fell)}: {listed}"
    if strict and fell:
        return Status.FAILED, f"strict fallback: {where}"
    if share > max_time_share:
        return (
            Status.FAILED,
            f"{share:.1%} of {of_what} ran on CPU, over the budget of {max_time_share:.1%}; {where}",
        )
    return Status.PASSED, f"{share:.1%} of {of_what} on CPU (budget {max_time_share:.1%}); {where}"


def overall(statuses: list[Status]) -> Status:
    """A target errors if any check errored, fails if any failed, is expected if its load was."""
    if Status.ERROR in statuses:
        return Status.ERROR
    if Status.FAILED in statuses:
        return Status.FAILED
    if Status.EXPECTED in statuses:
        return Status.EXPECTED
    return Status.PASSED
