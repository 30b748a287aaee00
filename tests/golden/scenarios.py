"""TargetResults for report tests, built in Python as `onnx-gate verify` would write them.

``tinycnn`` mirrors `onnx-gate plan --config examples/tinycnn/onnx-gate.yml` (12 targets) plus two
planned expected skips, with one parity failure and one OpenVINO target over its CPU-fallback budget.
``many`` generates any number of targets for the size-limit tests. Figures are made-up test data,
seeded, not measurements.
"""

from __future__ import annotations

import dataclasses
import math
import random

from ci_onnx.contracts.results import (
    RESULT_SCHEMA_VERSION,
    CheckResult,
    DecisionStats,
    Environment,
    LatencyStat,
    OutputParity,
    PlacedNode,
    Placement,
    TargetResult,
)
from ci_onnx.contracts.target import Status, Target
from ci_onnx.plan import Plan
from tests.support.results import observation

CPU = "CPUExecutionProvider"
OV = "OpenVINOExecutionProvider"
BATCHES = (1, 8, 32)
ELEMENTS = 480  # 48 inputs (16 random + 32 samples) × 10 logits
BUDGET = 0.05

PARITY_FAIL = "ort1.20.1-cpu-op18-torchscript"
FALLBACK_FAIL = "ort1.24.1-openvino-op18-dynamo"


def tinycnn_targets() -> list[Target]:
    out = []
    for runtime, provider, spec in (
        ("1.20.1", "cpu", ""),
        ("1.24.1", "openvino", "latest"),
        ("1.32.0", "cpu", "latest"),
    ):
        for opset in (17, 18):
            for exporter in ("dynamo", "torchscript"):
                out.append(Target(runtime, provider, opset, exporter, runtime_spec=spec))
    return out


def expected_skips() -> list[Target]:
    reason = "onnxruntime 1.20 loads opset <= 21; opset 23 needs onnxruntime >= 1.23"
    return [
        Target("1.20.1", "cpu", 23, "dynamo", expected_skip=reason),
        Target("1.20.1", "cpu", 23, "torchscript", expected_skip=reason),
    ]


def _latency(rng: random.Random, provider: str) -> tuple[LatencyStat, ...]:
    base = 0.21 if provider == "cpu" else 0.34
    stats = []
    for b in BATCHES:
        p50 = round(base * (1 + 0.6 * b) * rng.uniform(0.9, 1.1), 3)
        stats.append(LatencyStat(b, p50, round(p50 * 1.15, 3), round(p50 * 1.6, 3), 200))
    return tuple(stats)


def _placement(target: Target, cpu_share: float) -> Placement:
    if target.provider == "cpu":
        return Placement("profile", {CPU: 11}, {CPU: 412.0}, ())
    total = 380.0
    fallback: tuple[PlacedNode, ...] = (
        PlacedNode("/pool/ReduceMean", "ReduceMean", CPU, round(total * cpu_share, 1)),
    )
    if cpu_share > BUDGET:
        fallback += (PlacedNode("/head/Softmax", "Softmax", CPU, 0.0),)
    return Placement(
        "profile",
        {OV: 11 - len(fallback), CPU: len(fallback)},
        {OV: round(total * (1 - cpu_share), 1), CPU: round(total * cpu_share, 1)},
        fallback,
    )


def result_for(
    target: Target, rng: random.Random, *, parity_fail: bool = False, cpu_share: float = 0.0
) -> TargetResult:
    ep = OV if target.provider == "openvino" else CPU
    max_abs = 3.07e-2 if parity_fail else round(rng.uniform(1e-7, 4e-6), 9)
    parity = OutputParity(
        "logits",
        max_abs,
        2.4e-1 if parity_fail else max_abs * 12,
        37 if parity_fail else 0,
        ELEMENTS,
        1e-4,
        1e-3,
        worst_share=2.73 if parity_fail else round(max_abs / 1.1e-4, 3),
        sqnr_db=31.4 if parity_fail else round(20 * math.log10(4.2 / max_abs), 1),
        cosine=0.99962 if parity_fail else 1.0,
    )
    decisions = DecisionStats("logits", 1, 2 if parity_fail else 0, 48)
    checks = [
        CheckResult("load", Status.PASSED, duration_s=0.04),
        CheckResult("provider", Status.PASSED, f"{ep} registered"),
        CheckResult(
            "parity[logits]",
            Status.FAILED if parity_fail else Status.PASSED,
            "37 of 480 elements out of tolerance (atol 1e-4, rtol 1e-3)" if parity_fail else "",
            {
                "max_abs": parity.max_abs,
                "max_rel": parity.max_rel,
                "out_of_tolerance": parity.out_of_tolerance,
            },
        ),
        CheckResult(
            "decision",
            Status.FAILED if parity_fail else Status.PASSED,
            "top-1 changed on 2 of 48 inputs (samples 7, 31)" if parity_fail else "",
            {"changed": decisions.changed, "total": decisions.total},
        ),
        *(CheckResult(f"batch[{b}]", Status.PASSED) for b in BATCHES),
    ]
    placement = _placement(target, cpu_share)
    if target.provider != "cpu":
        over = cpu_share > BUDGET
        checks.append(
            CheckResult(
                "fallback",
                Status.FAILED if over else Status.PASSED,
                f"{placement.cpu_time_share:.1%} of node time on CPUExecutionProvider, budget {BUDGET:.0%} "
                "(budgets.cpu_fallback.max_time_share)"
                if over
                else "",
                {"cpu_time_share": round(placement.cpu_time_share, 4), "max_time_share": BUDGET},
            )
        )
    checks += [
        CheckResult("latency", Status.PASSED),
        CheckResult("memory", Status.PASSED, figures={"peak_rss_mb": 148.2}),
    ]
    failed = parity_fail or cpu_share > BUDGET
    summary = ""
    if parity_fail:
        summary = "parity[logits]: 37 of 480 elements out of tolerance; decision changed on 2 of 48 inputs"
    elif cpu_share > BUDGET:
        summary = (
            f"fallback: {placement.cpu_time_share:.1%} of node time on CPU, over the {BUDGET:.0%} budget"
        )
    return TargetResult(
        schema_version=RESULT_SCHEMA_VERSION,
        target=target,
        status=Status.FAILED if failed else Status.PASSED,
        summary=summary,
        checks=tuple(checks),
        parity=(parity,),
        decisions=decisions,
        observation=observation(
            target.id,
            Environment(target.runtime, (ep, CPU), (ep, CPU), "linux-x86_64"),
            placement=placement,
            latency=_latency(rng, target.provider),
            session_create_ms=round(rng.uniform(8, 30), 1),
            peak_rss_mb=148.2,
        ),
        bundle="9f2c4e1a" * 8,
        started_at="2026-11-29T21:00:00Z",
        duration_s=round(rng.uniform(3, 9), 2),
        reproduce=f"onnx-gate verify --bundle onnx-gate-out/bundles/{target.bundle_key} --target {target.id}",
    )


def tinycnn(seed: int = 0) -> tuple[Plan, list[TargetResult]]:
    rng = random.Random(seed)
    targets = tinycnn_targets()
    results = [
        result_for(
            t,
            rng,
            parity_fail=t.id == PARITY_FAIL,
            cpu_share=(0.412 if t.id == FALLBACK_FAIL else 0.012) if t.provider == "openvino" else 0.0,
        )
        for t in targets
    ]
    plan = Plan(1, "examples/tinycnn/onnx-gate.yml", "digitnet", tuple(targets + expected_skips()))
    return plan, results


def all_passing(seed: int = 0) -> tuple[Plan, list[TargetResult]]:
    plan, results = tinycnn(seed)
    rng = random.Random(seed)
    fixed = [
        result_for(r.target, rng, cpu_share=0.012 if r.target.provider == "openvino" else 0.0)
        for r in results
    ]
    return plan, fixed


def many(n: int, seed: int = 1, fail_every: int = 7) -> tuple[Plan, list[TargetResult]]:
    """``n`` targets over runtimes × providers × opsets × exporters; every ``fail_every``-th fails."""
    rng = random.Random(seed)
    targets: list[Target] = []
    minor = 15
    while len(targets) < n:
        for provider in ("cpu", "openvino"):
            for opset in (17, 18):
                for exporter in ("dynamo", "torchscript"):
                    if len(targets) < n:
                        targets.append(Target(f"1.{minor}.0", provider, opset, exporter))
        minor += 1
    results = []
    for i, t in enumerate(targets):
        fails = fail_every > 0 and i % fail_every == fail_every - 1
        if t.provider == "openvino":
            results.append(result_for(t, rng, cpu_share=0.3 if fails else 0.01))
        else:
            results.append(result_for(t, rng, parity_fail=fails))
    plan = Plan(1, "onnx-gate.yml", "many", tuple(targets))
    return plan, results


def without(results: list[TargetResult], target_id: str) -> list[TargetResult]:
    return [r for r in results if r.target.id != target_id]


def errored(result: TargetResult, why: str) -> TargetResult:
    return dataclasses.replace(
        result, status=Status.ERROR, summary=why, checks=(CheckResult("load", Status.ERROR, why),)
    )
