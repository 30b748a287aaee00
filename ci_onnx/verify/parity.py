"""The checks on the outputs themselves: ``parity[<output>]`` (each output against the reference) and
``decision`` (top-k decisions that changed). Their figures travel in the TargetResult too."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from ci_onnx.contracts import serde
from ci_onnx.contracts.bundle import Manifest
from ci_onnx.contracts.results import CheckResult, DecisionStats, Observation, OutputParity
from ci_onnx.contracts.target import Status
from ci_onnx.verify import compare, decode
from ci_onnx.verify.context import Context
from ci_onnx.verify.evidence import Evidence, value


def check(ctx: Context) -> list[CheckResult]:
    """``parity[<output>]`` for each declared output."""
    return figures(ctx)[1]


def decision(ctx: Context) -> list[CheckResult]:
    """``decision``, where the bundle declares a decision output."""
    found = decisions(ctx)
    return [] if found is None else [_decision_check(found)]


def figures(ctx: Context) -> tuple[list[OutputParity], list[CheckResult]]:
    """Each output's figures against the reference, and its ``parity[…]`` check (computed once)."""
    if "parity" not in ctx.memo:
        ctx.memo["parity"] = of(ctx.manifest, ctx.obs, ctx.evidence)
    return ctx.memo["parity"]


def decisions(ctx: Context) -> DecisionStats | None:
    if "decisions" not in ctx.memo:
        ctx.memo["decisions"] = decisions_of(ctx.manifest, ctx.evidence)
    return ctx.memo["decisions"]


def of(
    manifest: Manifest, obs: Observation, evidence: Evidence
) -> tuple[list[OutputParity], list[CheckResult]]:
    stats: list[OutputParity] = []
    checks: list[CheckResult] = []
    for spec in manifest.outputs:
        tol = manifest.tolerance_for(spec.name)
        parts: list[OutputParity] = []
        pairs: list[tuple[Any, Any]] = []
        problems: list[str] = []
        for ds in manifest.test_data_sets:
            if ds.directory in obs.run_errors:
                problems.append(f"{ds.directory}: the run failed: {obs.run_errors[ds.directory]}")
                continue
            observed = evidence.observed.get(ds.directory, {})
            if spec.name not in observed:
                problems.append(f"{ds.directory}: the model gave no output {spec.name!r}")
                continue
            try:
                got = value(observed[spec.name])
                ref = value(evidence.reference[ds.directory][spec.name])
            except decode.DecodeError as exc:
                problems.append(f"{ds.directory}: {exc}")
                continue
            p = compare.values(spec.name, got, ref, tol)
            if isinstance(got, np.ndarray) and isinstance(ref, np.ndarray):
                pairs.append((got, ref))
            if p.shape_mismatch:
                problems.append(f"{ds.directory}: {p.shape_mismatch}")
            parts.append(p)
        sqnr, cosine = compare.error_stats(pairs)
        merged = dataclasses.replace(
            _merge(spec.name, parts, tol.atol, tol.rtol), sqnr_db=sqnr, cosine=cosine
        )
        stats.append(merged)
        figures = serde.to_json(merged)
        if problems:
            checks.append(CheckResult(f"parity[{spec.name}]", Status.FAILED, "; ".join(problems), figures))
        else:
            status = Status.PASSED if merged.passed else Status.FAILED
            checks.append(CheckResult(f"parity[{spec.name}]", status, compare.describe(merged), figures))
    return stats, checks


def _merge(name: str, parts: list[OutputParity], atol: float, rtol: float) -> OutputParity:
    def biggest(values: list[float]) -> float:
        finite = [v for v in values if not math.isnan(v)]
        return max(finite) if finite else (math.nan if values else 0.0)

    return OutputParity(
        output=name,
        max_abs=biggest([p.max_abs for p in parts]),
        max_rel=biggest([p.max_rel for p in parts]),
        out_of_tolerance=sum(p.out_of_tolerance for p in parts),
        elements=sum(p.elements for p in parts),
        atol=atol,
        rtol=rtol,
        nonfinite_mismatches=sum(p.nonfinite_mismatches for p in parts),
        shape_mismatch="; ".join(p.shape_mismatch for p in parts if p.shape_mismatch),
        worst_share=max((p.worst_share for p in parts if p.worst_share is not None), default=None),
    )


def decisions_of(manifest: Manifest, evidence: Evidence) -> DecisionStats | None:
    d = manifest.decision
    if d is None or not any(s.name == d.output for s in manifest.outputs):
        return None
    parts = []
    for ds in manifest.test_data_sets:
        observed = evidence.observed.get(ds.directory, {})
        if d.output not in observed:
            continue
        ref = value(evidence.reference[ds.directory][d.output])
        parts.append(compare.decisions(d.output, value(observed[d.output]), ref, d.top_k))
    return compare.merge_decisions(parts) or DecisionStats(d.output, d.top_k, 0, 0)


def _decision_check(d: DecisionStats) -> CheckResult:
    figures = serde.to_json(d)
    if d.total == 0:
        return CheckResult(
            "decision", Status.FAILED, f"no output {d.output!r} to compare decisions on", figures
        )
    text = f"{d.changed} of {d.total} top-{d.top_k} decisions on {d.output!r} changed"
    return CheckResult("decision", Status.FAILED if d.changed else Status.PASSED, text, figures)
