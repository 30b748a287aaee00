"""Whose fault a divergence is: the comparisons of one triaged sample, turned into a fault class with
its evidence, the first diverging node, the error along the path, and what to reproduce.

Pure: every value arrives as an array (name → array per reference); nothing here runs anything.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

import numpy as np

from ci_onnx.contracts.triage_contract import FaultClass
from ci_onnx.triage import faults, walk
from ci_onnx.triage.findings import Finding, Sample, fmt, name, times

__all__ = ["FEW", "Finding", "Sample", "classify"]

FEW = 10.0
"""'A few times the tolerance': below this share everywhere, with a smooth growth, it is the bound."""
ROUNDING = 1e-4
"""A relative error (to the value's largest magnitude) at float32 rounding, some hundreds of ulps
accumulated through a deep graph; a wrong result at a node is orders of magnitude above it."""


def _rounding_or_few(e: walk.Error) -> bool:
    return e.share <= FEW or e.relative <= ROUNDING


def classify(s: Sample) -> Finding:
    final_torch = walk.error(s.as_run, s.torch_out, s.atol, s.rtol)
    if s.precision != "fp32":
        return faults.precision(s, final_torch)
    if s.reference is None:
        return Finding(None, None, "", (), stopped="onnx's ReferenceEvaluator could not run the graph")
    ref, out = s.reference, s.output
    within = s.graph.ancestors_of(out)
    ref_vs_torch = walk.error(ref[out], s.torch_out, s.atol, s.rtol)
    off_errs = walk.errors(s.off, ref, s.atol, s.rtol) if s.off is not None else {}
    opt_errs = walk.errors(s.optimized[1], ref, s.atol, s.rtol) if s.optimized is not None else {}
    torch_errs = walk.errors(ref, s.torch, s.atol, s.rtol) if s.torch else {}
    if torch_errs and out not in torch_errs:  # the failing output is PyTorch's own: compared too
        torch_errs[out] = ref_vs_torch
    graph_says = "the target with optimizations off" if s.stand_in else "onnx's reference"
    facts = [
        f"the target as it ran differs from {s.source} by {fmt(final_torch)} at {out}",
        f"{graph_says} differs from {s.source} by {fmt(ref_vs_torch)}",
    ]
    every = [e for d in (off_errs, opt_errs, torch_errs) for e in d.values()]
    if _rounding_or_few(final_torch) and all(map(_rounding_or_few, every)) and (off_errs or opt_errs):
        return _tolerance(s, final_torch, off_errs or opt_errs, torch_errs, every, within, facts)
    if ref_vs_torch.out:
        found = faults.export(s, torch_errs, within, facts)
        if not s.stand_in:
            return found
        where = f" at {name(found.node)}" if found.node is not None else ""
        return dataclasses.replace(
            found,
            fault=None,
            summary=f"export or runtime fault{where}: the graph as onnxruntime computes it differs "
            f"from {s.source}",
            stopped="onnx's ReferenceEvaluator could not run the graph, so an export fault and a runtime "
            "fault cannot be told apart; the first module that differs from PyTorch is named",
        )
    off_out = off_errs.get(out)
    if off_out is not None and off_out.out:
        return faults.runtime(
            s,
            off_errs,
            within,
            [*facts, f"with optimizations off it differs from the reference by {fmt(off_out)}"],
            ref_vs_torch,
        )
    as_run_vs_ref = walk.error(s.as_run, ref[out], s.atol, s.rtol)
    if s.optimized is not None and off_out is not None and as_run_vs_ref.out:  # off_out is within here
        return faults.optimization(
            s,
            opt_errs,
            [
                *facts,
                f"as it ran it differs from the reference by {fmt(as_run_vs_ref)}",
                f"with optimizations off it matches the reference ({fmt(off_out)})",
            ],
        )
    return Finding(
        None, None, "", tuple(facts), stopped="no reference isolates the divergence on this sample"
    )


def _suggest(got: np.ndarray, ref: np.ndarray, rtol: float) -> dict[str, float]:
    """The smallest atol (two significant digits, rounded up) that passes with ``rtol`` kept."""
    g, r = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    need = float(np.max(np.abs(g - r) - rtol * np.abs(r), initial=0.0))
    if need <= 0:
        return {"atol": 0.0, "rtol": rtol}
    digits = 10 ** (math.floor(math.log10(need)) - 1)
    return {"atol": float(f"{math.ceil(need / digits) * digits:.2g}"), "rtol": rtol}


def _tolerance(
    s: Sample,
    final: walk.Error,
    errs: Mapping[str, walk.Error],
    torch_errs: Mapping[str, walk.Error],
    every: list[walk.Error],
    within: set[str],
    facts: list[str],
) -> Finding:
    made_by = s.graph.producer()
    shown = torch_errs or errs  # the error against PyTorch grows along the graph; the runtime's may be 0
    grow = walk.largest_jump(s.graph, shown, within) or made_by.get(s.output)
    rows = walk.path(s.graph, grow, s.output, shown) if grow is not None and shown else []
    smooth = walk.smooth(rows)
    suggested = _suggest(*(s.everywhere or (s.as_run, s.torch_out)), s.rtol)
    worst = max((e.share for e in every), default=0.0)
    worst_rel = max((e.relative for e in every if e.share > FEW), default=0.0)
    evidence = [
        *facts,
        f"every node is within {FEW:g}× the tolerance (the worst {times(worst)})"
        if worst <= FEW
        else f"every node is within {FEW:g}× the tolerance or at float32 rounding (relative error at most "
        f"{ROUNDING:g}; the worst beyond {FEW:g}×: {worst_rel:.2g})",
        "the error grows smoothly along the path"
        if smooth
        else "the error grows along the path, with one larger step",
        f"atol {suggested['atol']:g} (rtol {suggested['rtol']:g}) would pass: the differences are rounding, "
        "not a wrong result, if the application tolerates them",
    ]
    summary = (
        f"tolerance: {s.output} differs from {s.source} by {final.max_abs:.2g} "
        f"({times(final.share)} the tolerance) "
        f"and every node stays within {FEW:g}× it or at rounding; atol {suggested['atol']:g} would pass"
    )
    return Finding(
        FaultClass.TOLERANCE,
        grow,
        summary,
        tuple(evidence),
        tuple(rows),
        suggested,
        repro_graph="",
        stopped="",
    )
