"""Turn a bundle's references and a runner's Observation into checks, and the checks into a TargetResult.

Pure: the tensors come decoded, in an Evidence (ci_onnx.verify.evidence reads them from disk at the
verify stage's edge), so any pair of references and observed outputs can be judged the same way.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ci_onnx import matrix
from ci_onnx.contracts.bundle import Manifest
from ci_onnx.contracts.results import (
    RESULT_SCHEMA_VERSION,
    CheckResult,
    Observation,
    TargetResult,
)
from ci_onnx.contracts.shorten import fit, runtime_words
from ci_onnx.contracts.target import Status, Target
from ci_onnx.contracts.verify_options import VerifyOptions
from ci_onnx.observer.values import element_names
from ci_onnx.verify import accuracy, budgets, cache_check, compare, engine_precision, parity, serving, sweeps
from ci_onnx.verify.context import Context, Registered
from ci_onnx.verify.evidence import Evidence


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
        schema_version=RESULT_SCHEMA_VERSION,
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
        return result(target, manifest, checks, observation=obs)
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
        return result(target, manifest, checks, observation=obs)
    ctx = Context(target, manifest, obs, evidence, options)
    for entry in CHECKS:
        checks += [_unmeasured(c, obs.unmeasured, entry.needs) for c in entry.check(ctx)]
    return result(
        target,
        manifest,
        checks,
        observation=obs,
        parity=tuple(parity.figures(ctx)[0]),
        decisions=parity.decisions(ctx),
    )


CHECKS: tuple[Registered, ...] = (
    Registered(parity.check),
    Registered(parity.decision),
    Registered(accuracy.check),
    Registered(cache_check.check),
    Registered(serving.batch, needs={"batch": "batch"}),
    Registered(sweeps.check),
    Registered(serving.fallback_check, needs={"fallback": "placement"}),
    Registered(engine_precision.check),
    Registered(serving.timing_check, needs={"latency": "latency", "memory": "memory"}),
    Registered(budgets.check),
)
"""The checks of a target that loaded and ran, in the order its report lists them: one line each
(a function from the context to its check results, and what it needs the runner to have measured).
Before them: the export's findings, ``runtime``, ``load`` and ``provider`` (verify/judge.judge)."""


def _unmeasured(check: CheckResult, unmeasured: dict[str, str], needs: dict[str, str]) -> CheckResult:
    """A check that needs what the runner declared it could not measure: skipped, with its reason."""
    what = needs.get(check.name.split("[", 1)[0])
    if what in unmeasured and check.status != Status.PASSED:
        return CheckResult(check.name, Status.SKIPPED, f"not measured by this runner: {unmeasured[what]}")
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
