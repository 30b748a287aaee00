"""Turn a bundle's references and a runner's Observation into checks, and the checks into a TargetResult.

Pure: the tensors come decoded, in an Evidence (ci_onnx.verify.evidence reads them from disk at the
verify stage's edge), so any pair of references and observed outputs can be judged the same way.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from ci_onnx import matrix, serde
from ci_onnx.bundle import Manifest
from ci_onnx.observer.values import element_names
from ci_onnx.results import (
    SCHEMA_VERSION,
    CheckResult,
    DecisionStats,
    Observation,
    OutputParity,
    TargetResult,
)
from ci_onnx.shorten import fit, runtime_words
from ci_onnx.target import Status, Target
from ci_onnx.verify import accuracy, budgets, cache_check, compare, decode, engine_precision, serving, sweeps
from ci_onnx.verify.evidence import Evidence, value
from ci_onnx.verify_options import VerifyOptions


def export_checks(manifest: Manifest) -> list[CheckResult]:
    """The export's findings, so each target's report shows export, checker, opset, train-mode…

    The exporter's warnings stay in the manifest (the export's log shows them), out of each result."""
    return [dataclasses.replace(f, figures=dict(f.figures), warnings=()) for f in manifest.findings]


def result(
    target: Target, manifest: Manifest | None, checks: list[CheckResult], **fields: Any
) -> TargetResult:
    """A TargetResult whose status and summary follow from its checks."""
    status = compare.overall([c.status for c in checks])
    worst = next((c for c in checks if c.status == status and status != Status.PASSED), None)
    summary = f"{worst.name}: {worst.message}" if worst else ""
    return TargetResult(
        schema_version=SCHEMA_VERSION,
        target=target,
        status=status,
        summary=fit(summary, 500),
        checks=tuple(checks),
        bundle=manifest.files.get("model.onnx", "") if manifest else "",
        **fields,
    )


def judge(
    target: Target,
    manifest: Manifest,
    obs: Observation,
    evidence: Evidence,
    options: VerifyOptions,
    expected_skip: str = "",
) -> TargetResult:
    """The verdict on ``obs``, comparing ``evidence`` (its outputs and the references, decoded).

    Raises decode.DecodeError where a comparison needs a value that did not decode.
    """
    checks = export_checks(manifest)
    env = obs.environment
    provider = matrix.providers()[target.provider]
    package = matrix.runners()[target.runner].package_for(target.provider)
    if env is not None and env.runtime_version != target.runtime:
        checks.append(
            CheckResult(
                "runtime",
                Status.ERROR,
                f"the target asks for {package} {target.runtime}, the environment holds "
                f"{env.runtime_version}; "
                + (
                    f"verify without --python (onnx-gate makes that environment), or pass --python of "
                    f"one with {package}=={target.runtime}"
                    if matrix.runners()[target.runner].can.interpreter
                    else f"clear the {target.runner} runner's cached install of {target.runtime}"
                ),
            )
        )
    if obs.load_error or obs.run_errors:
        expected_skip = expected_skip or _cannot_hold(target, manifest)
    if obs.load_error:
        if expected_skip:
            checks.append(
                CheckResult(
                    "load",
                    Status.EXPECTED,
                    f"{expected_skip}; the runtime says: {runtime_words(obs.load_error)}",
                )
            )
        else:
            checks.append(CheckResult("load", Status.FAILED, obs.load_error))
        return result(target, manifest, checks, environment=env)
    note = f" (the plan expected it not to: {expected_skip})" if expected_skip else ""
    checks.append(
        CheckResult(
            "load",
            Status.PASSED,
            f"opset {manifest.opset}, IR {manifest.ir_version} loaded{note}",
            {"opset": manifest.opset, "ir_version": manifest.ir_version},
        )
    )
    checks.append(_provider(provider.ep, obs))
    if obs.run_errors and expected_skip:
        first = next(iter(obs.run_errors.values()))
        checks.append(CheckResult("run", Status.EXPECTED, f"{expected_skip}; the runtime says: {first}"))
        return result(target, manifest, checks, environment=env)
    parity, parity_checks = _parity(manifest, obs, evidence)
    checks += parity_checks
    decisions = _decisions(manifest, evidence)
    if decisions is not None:
        checks.append(_decision_check(decisions))
    checks += accuracy.checks(manifest, obs, evidence, options.accuracy_drop)
    checks += cache_check.checks(manifest, obs, evidence, target.runner)
    checks += serving.batch_checks(manifest, obs, evidence, options.declared_batch_sizes)
    checks += sweeps.checks(manifest, obs, evidence, target.runner)
    checks.append(serving.fallback(obs, provider.accelerator, options))
    checks += engine_precision.checks(obs)
    checks += serving.timing(obs)
    checks += budgets.checks(obs, options.budgets)  # cold start, and budgets.* where set
    checks = [_unmeasured(c, obs.unmeasured) for c in checks]
    return result(
        target,
        manifest,
        checks,
        environment=env,
        parity=tuple(parity),
        decisions=decisions,
        placement=obs.placement,
        latency=obs.latency,
        session_create_ms=obs.session_create_ms,
        peak_rss_mb=obs.peak_rss_mb,
        serving=obs.serving,
        paired=obs.paired,
        sweep_latency=obs.sweep_latency,
    )


UNMEASURED_CHECKS = {"placement": "fallback", "memory": "memory", "latency": "latency", "batch": "batch"}
"""What a runner may declare it could not measure → the check (or family, ``batch[N]``) that needs it."""


def _unmeasured(check: CheckResult, unmeasured: dict[str, str]) -> CheckResult:
    """A check that needs what the runner declared it could not measure: skipped, with its reason."""
    family = check.name.split("[", 1)[0]
    for what, reason in unmeasured.items():
        if UNMEASURED_CHECKS.get(what) == family and check.status != Status.PASSED:
            return CheckResult(check.name, Status.SKIPPED, f"not measured by this runner: {reason}")
    return check


def _cannot_hold(target: Target, manifest: Manifest) -> str:
    """The runtime table's reason, when an input or output has a type this release cannot express."""
    types = [t for s in (*manifest.inputs, *manifest.outputs) if s.dtype for t in element_names(s.dtype)]
    caps = matrix.runners()[target.runner].caps_for(target.runtime)
    return caps.cannot_hold(types) if caps is not None else ""


def _provider(ep: str, obs: Observation) -> CheckResult:
    registered = obs.environment.providers_registered if obs.environment else ()
    available = obs.environment.providers_available if obs.environment else ()
    figures = {"requested": ep, "registered": list(registered), "available": list(available)}
    if ep in registered:
        return CheckResult("provider", Status.PASSED, f"{ep} registered", figures)
    return CheckResult(
        "provider",
        Status.FAILED,
        f"asked for {ep}, got {', '.join(registered) or 'nothing'}: the package or driver is missing "
        f"(the installed package offers {', '.join(available) or 'nothing'})",
        figures,
    )


def _parity(
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


def _decisions(manifest: Manifest, evidence: Evidence) -> DecisionStats | None:
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
