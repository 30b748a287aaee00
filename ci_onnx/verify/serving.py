"""The checks of how a target serves: batch sizes, where nodes ran, latency and memory."""

from __future__ import annotations

from ci_onnx import serde
from ci_onnx.bundle import Manifest
from ci_onnx.observer.feeds import batch_axis_problem, batched_outputs
from ci_onnx.results import CheckResult, Observation
from ci_onnx.target import Status
from ci_onnx.verify import compare
from ci_onnx.verify.evidence import Evidence, value
from ci_onnx.verify_options import VerifyOptions


def batch_checks(manifest: Manifest, obs: Observation, evidence: Evidence) -> list[CheckResult]:
    """One check per served batch size, where the inputs have a batch axis; a skip saying why not."""
    checks = []
    no_axis = batch_axis_problem(manifest)
    batched = batched_outputs(manifest)
    if not no_axis and not batched:
        no_axis = "no output has the batch axis, so no output can be compared across batch sizes"
    unbatched = [s.name for s in manifest.outputs if s.name not in batched]
    aside = (
        f"; not compared: {', '.join(unbatched)} (axis 0 does not carry the batch: it depends on the "
        "whole batch, and parity compares it whole)"
        if unbatched
        else ""
    )
    for n in sorted(manifest.batch_sizes):
        name = f"batch[{n}]"
        if no_axis:
            checks.append(CheckResult(name, Status.SKIPPED, f"not checked: {no_axis}"))
            continue
        if str(n) in obs.batch_errors:
            checks.append(CheckResult(name, Status.FAILED, obs.batch_errors[str(n)]))
            continue
        if obs.batch_reference_error or str(n) not in evidence.batch:
            why = obs.batch_reference_error or "the runner did not run this batch size"
            checks.append(CheckResult(name, Status.FAILED, why))
            continue
        parts = []
        for spec in (s for s in manifest.outputs if s.name in batched):
            served = evidence.batch[str(n)]
            if spec.name not in served or spec.name not in evidence.batch_reference:
                continue
            ref = value(evidence.batch_reference[spec.name])[:n]
            got = value(served[spec.name])
            parts.append(compare.values(spec.name, got, ref, manifest.tolerance_for(spec.name)))
        bad = [p for p in parts if not p.passed]
        figures = {p.output: serde.to_json(p) for p in parts}
        if bad:
            detail = "; ".join(f"{p.output}: {p.shape_mismatch or compare.describe(p)}" for p in bad)
            checks.append(
                CheckResult(
                    name, Status.FAILED, f"batch {n} differs from {n} single runs: {detail}{aside}", figures
                )
            )
        else:
            worst = max((p.max_abs for p in parts), default=0.0)
            text = f"one run of batch {n} matches {n} single runs (max abs {worst:.3g}){aside}"
            checks.append(CheckResult(name, Status.PASSED, text, figures))
    return checks


def fallback(obs: Observation, accelerator: bool, options: VerifyOptions) -> CheckResult:
    if obs.strict_fallback_error:
        return CheckResult("fallback", Status.FAILED, f"strict fallback: {obs.strict_fallback_error}")
    p = obs.placement
    if p is None:
        return CheckResult(
            "fallback",
            Status.ERROR,
            f"where nodes ran could not be learnt: {obs.placement_error or 'no data'}",
        )
    status, text = compare.fallback_verdict(
        p, accelerator=accelerator, max_time_share=options.max_cpu_time_share, strict=options.strict_fallback
    )
    figures = {
        "source": p.source,
        "nodes_by_provider": p.nodes_by_provider,
        "time_us_by_provider": p.time_us_by_provider,
        "cpu_time_share": round(p.cpu_time_share, 4),
        "max_time_share": options.max_cpu_time_share,
        "fallback_nodes": [serde.to_json(n) for n in p.fallback_nodes],
    }
    return CheckResult("fallback", status, f"{text} [from {p.source}]", figures)


def timing(obs: Observation) -> list[CheckResult]:
    checks = []
    if obs.latency:
        per = "; ".join(
            f"batch {s.batch_size}: p50 {s.p50_ms:.3g} ms, p90 {s.p90_ms:.3g} ms, p99 {s.p99_ms:.3g} ms"
            for s in obs.latency
        )
        created = f"; session created in {obs.session_create_ms:.0f} ms" if obs.session_create_ms else ""
        figures = {
            "latency": [serde.to_json(s) for s in obs.latency],
            "session_create_ms": obs.session_create_ms,
        }
        checks.append(CheckResult("latency", Status.PASSED, per + created, figures))
    else:
        checks.append(
            CheckResult("latency", Status.SKIPPED, "no served batch size ran, so nothing was timed")
        )
    if obs.peak_rss_mb is not None:
        text = (
            f"peak RSS {obs.peak_rss_mb:.0f} MB while {obs.memory_threads} threads served the largest batch"
        )
        figures = {
            "peak_rss_mb": obs.peak_rss_mb,
            "rss_before_mb": obs.rss_before_mb,
            "threads": obs.memory_threads,
        }
        checks.append(CheckResult("memory", Status.PASSED, text, figures))
    else:
        checks.append(
            CheckResult("memory", Status.SKIPPED, "no served batch size ran, so memory was not measured")
        )
    return checks
