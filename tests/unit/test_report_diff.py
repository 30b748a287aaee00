"""What changed between base and head on one target: parity drift, placement, serving with its noise rule."""

from __future__ import annotations

import dataclasses
import random

import pytest

from ci_onnx.contracts.gate_settings import GateSettings
from ci_onnx.contracts.results import LatencyStat, PairedLatency, PlacedNode, ServingFigures, TargetResult
from ci_onnx.report import diff, noise
from tests.golden import scenarios
from tests.support.results import observed

SETTINGS = GateSettings()
HEAD = "sha-head"
"""The head's model: another file than the base's, so its serving figures are compared."""


def pair() -> tuple[TargetResult, TargetResult]:
    _, results = scenarios.all_passing()
    base = next(r for r in results if r.target.provider == "openvino")
    return base, base


def samples(median: float, n: int = 20, spread: float = 0.03, seed: int = 0) -> tuple[float, ...]:
    rng = random.Random(seed)
    return tuple(round(median * (1 + rng.gauss(0, spread)), 4) for _ in range(n))


def with_latency(r: TargetResult, *stats: LatencyStat, bundle: str = "sha-base") -> TargetResult:
    return observed(dataclasses.replace(r, bundle=bundle), latency=stats, serving=None, peak_rss_mb=None)


def stat(batch: int, values: tuple[float, ...]) -> LatencyStat:
    ordered = sorted(values)
    return LatencyStat(batch, ordered[len(values) // 2], ordered[-2], ordered[-1], len(values), values)


# --- the rank test ------------------------------------------------------------------------------


def test_the_rank_test_tells_a_shift_from_noise() -> None:
    same = noise.mann_whitney_greater(samples(1.0, seed=1), samples(1.0, seed=2))
    slower = noise.mann_whitney_greater(samples(2.0, seed=1), samples(1.0, seed=2))
    faster = noise.mann_whitney_greater(samples(0.5, seed=1), samples(1.0, seed=2))
    assert 0.01 < same < 0.99 and slower < 1e-6 and faster > 1 - 1e-6
    assert noise.mann_whitney_greater([1.0] * 20, [1.0] * 20) == 1.0  # all tied: no evidence


def test_ranks_share_ties() -> None:
    assert noise.ranks([3.0, 1.0, 3.0, 2.0]) == [3.5, 1.0, 3.5, 2.0]


def test_a_tail_of_fewer_than_100_runs_is_the_maximum_and_is_named_so() -> None:
    assert noise.tail([1.0, 5.0, 2.0]) == (5.0, "max of 3")
    hundred = [float(i) for i in range(1, 101)]
    assert noise.tail(hundred) == (99.0, "p99")


def test_a_large_ratio_alone_is_not_a_regression_nor_a_consistent_small_one() -> None:
    big_noise = noise.compare([1.0, 9.0] * 10, [1.0, 8.0] * 10, threshold=0.1, p=0.01)
    assert big_noise.ratio > 1.1 and not big_noise.regression  # no rank evidence
    small = noise.compare(samples(1.05, spread=0.001), samples(1.0, spread=0.001), threshold=0.1, p=0.01)
    assert small.p is not None and small.p < 1e-6 and not small.regression  # under the threshold
    doubled = noise.compare(samples(2.0), samples(1.0), threshold=0.1, p=0.01)
    assert doubled.regression and "Mann-Whitney" in doubled.test


def test_too_few_runs_for_the_rank_test_fall_back_to_the_threshold_and_say_so() -> None:
    v = noise.compare([2.0, 2.1, 2.0], [1.0, 1.1, 1.0], threshold=0.1, p=0.01)
    assert v.regression and v.p is None and "too few for the rank test" in v.test


# --- parity drift and placement -----------------------------------------------------------------


def test_parity_drift_is_a_warning_past_the_threshold_only() -> None:
    base, _ = pair()
    grown = dataclasses.replace(base.parity[0], worst_share=base.parity[0].worst_share + 0.3)  # type: ignore[operator]
    head = dataclasses.replace(base, parity=(grown,))
    (found,) = [f for f in diff.compare(head, base, SETTINGS) if f.kind == diff.DRIFT]
    assert found.what == "parity[logits]" and not found.regression and found.figure.startswith("+30 points")
    slight = dataclasses.replace(base.parity[0], worst_share=base.parity[0].worst_share + 0.2)  # type: ignore[operator]
    assert not [
        f
        for f in diff.compare(dataclasses.replace(base, parity=(slight,)), base, SETTINGS)
        if f.kind == diff.DRIFT
    ]


def test_placement_counts_nodes_moved_to_the_cpu_and_new_fallback_ops_not_shape_arithmetic() -> None:
    base, _ = pair()
    placement = base.observed.placement
    assert placement is not None
    moved = (
        *placement.fallback_nodes,
        PlacedNode("/a/IsNaN", "IsNaN", "CPUExecutionProvider"),
        PlacedNode("/a/IsNaN_1", "IsNaN", "CPUExecutionProvider"),
        PlacedNode("/a/Shape", "Shape", "CPUExecutionProvider"),  # onnxruntime keeps it there by design
    )
    head = observed(base, placement=dataclasses.replace(placement, fallback_nodes=moved))
    (found,) = [f for f in diff.compare(head, base, SETTINGS) if f.kind == diff.PLACEMENT]
    assert found.figure == "+2 node(s) moved to the CPU; new fallback op(s): IsNaN"
    only_shape = dataclasses.replace(placement, fallback_nodes=(*placement.fallback_nodes, moved[-1]))
    assert not [
        f
        for f in diff.compare(observed(base, placement=only_shape), base, SETTINGS)
        if f.kind == diff.PLACEMENT
    ]


# --- serving ------------------------------------------------------------------------------------


def serving(findings: list[diff.Finding]) -> dict[str, diff.Finding]:
    return {f.what: f for f in findings if f.kind == diff.SERVING}


def test_stored_figures_use_the_wider_threshold_and_say_so() -> None:
    base, _ = pair()
    b = with_latency(base, stat(8, samples(1.0, seed=1)))
    slower = with_latency(base, stat(8, samples(1.2, seed=2)), bundle=HEAD)  # +20 %: past 10 %, within 25 %
    found = serving(diff.compare(slower, b, SETTINGS))["p50 latency, batch 8"]
    assert not found.regression and found.test.startswith(diff.STORED) and "threshold 25 %" in found.test
    assert not found.warning  # within its threshold: nothing to say
    much = with_latency(base, stat(8, samples(2.0, seed=2)), bundle=HEAD)
    warned = serving(diff.compare(much, b, SETTINGS))["p50 latency, batch 8"]
    assert warned.warning and not warned.regression and "a warning only (gate.stored_figures)" in warned.test
    blocking = dataclasses.replace(SETTINGS, stored_figures="block")
    assert serving(diff.compare(much, b, blocking))["p50 latency, batch 8"].regression


def test_side_by_side_figures_use_the_tighter_threshold_when_the_pair_is_of_this_base() -> None:
    base, _ = pair()
    b = with_latency(base, stat(8, samples(1.0, seed=1)), bundle="sha-base")
    paired = PairedLatency("sha-base", (stat(8, samples(1.2, seed=3)),), (stat(8, samples(1.0, seed=4)),))
    head = observed(with_latency(base, stat(8, samples(1.0, seed=5)), bundle=HEAD), paired=paired)
    found = serving(diff.compare(head, b, SETTINGS))
    assert found["p50 latency, batch 8"].regression and found["p50 latency, batch 8"].test.startswith(
        diff.SIDE_BY_SIDE
    )
    assert "max of 20 latency, batch 8" in found  # the tail is named for what it is
    other_base = dataclasses.replace(b, bundle="sha-other")  # a pair timed against another bundle
    assert serving(diff.compare(head, other_base, SETTINGS))["p50 latency, batch 8"].test.startswith(
        diff.STORED
    )


def test_single_figures_use_their_threshold_and_an_improvement_is_said() -> None:
    base, _ = pair()
    b = observed(
        base, latency=(), peak_rss_mb=100.0, serving=ServingFigures(cold_start_ms=300.0, model_bytes=1 << 20)
    )
    h = observed(
        dataclasses.replace(b, bundle=HEAD),
        peak_rss_mb=130.0,
        serving=ServingFigures(cold_start_ms=100.0, model_bytes=(1 << 20) + 1000),
    )
    found = serving(diff.compare(h, b, SETTINGS))
    assert found["peak RSS"].regression and found["peak RSS"].figure == "+30 %"
    assert found["cold start"].improved and not found["cold start"].regression
    assert not found["model size"].regression


@pytest.mark.parametrize("figure", ["p50 latency, batch 8", "max of 20 latency, batch 8"])
def test_results_of_a_runner_without_samples_are_compared_on_their_percentiles(figure: str) -> None:
    base, _ = pair()
    b = with_latency(base, LatencyStat(8, 1.0, 1.1, 1.2, 20))
    h = with_latency(base, LatencyStat(8, 2.0, 2.2, 2.6, 20), bundle=HEAD)
    found = serving(diff.compare(h, b, dataclasses.replace(SETTINGS, stored_figures="block")))
    name = figure if figure.startswith("p50") else "p99 latency, batch 8"
    assert found[name].regression and "no timed samples recorded" in found[name].test


def test_side_by_side_pairs_are_judged_run_for_run_against_the_threshold() -> None:
    rng = random.Random(3)
    # a busy machine: each moment slows both sides alike, by up to 5×
    moments = [rng.choice([1.0, 1.0, 1.8, 5.0]) for _ in range(60)]
    base = [m * rng.gauss(1.0, 0.02) for m in moments]
    noop = [m * rng.gauss(1.0, 0.02) for m in moments]
    doubled = [2 * m * rng.gauss(1.0, 0.02) for m in moments]
    assert not noise.paired(noop, base, threshold=0.1, p=0.01).regression
    v = noise.paired(doubled, base, threshold=0.1, p=0.01)
    assert v.regression and 1.9 < v.ratio < 2.1 and "60 pairs are over 10 % slower" in v.test
    slightly = [1.05 * x for x in base]  # consistently slower, but under the threshold
    assert not noise.paired(slightly, base, threshold=0.1, p=0.01).regression
    assert noise.wilcoxon_greater([1.0] * 10) < 0.01 and noise.wilcoxon_greater([-1.0] * 10) > 0.99


def test_a_cold_start_past_its_threshold_is_a_warning_never_a_block() -> None:
    base, _ = pair()
    b = observed(base, latency=(), serving=ServingFigures(cold_start_ms=300.0))
    h = observed(dataclasses.replace(b, bundle=HEAD), serving=ServingFigures(cold_start_ms=1200.0))
    found = serving(diff.compare(h, b, SETTINGS))["cold start"]
    assert found.warning and not found.regression and "a warning only" in found.test


def test_identical_model_bytes_runtime_and_providers_are_shown_not_compared() -> None:
    base, _ = pair()
    b = with_latency(base, stat(8, samples(1.0, seed=1)))
    noisy = with_latency(base, stat(8, samples(1.4, seed=2)))  # +40 % on a busy machine, same file
    assert diff.identical(noisy, b)
    found = diff.compare(noisy, b, dataclasses.replace(SETTINGS, stored_figures="block"))
    assert [f.kind for f in found if f.kind in (diff.SERVING, diff.NOT_COMPARED)] == [diff.NOT_COMPARED]
    assert not any(f.regression for f in found) and "shown, not compared" in found[-1].test
    env = base.observed.environment
    assert env is not None
    other_runtime = observed(noisy, environment=dataclasses.replace(env, runtime_version="9.9.9"))
    for head in (with_latency(base, stat(8, samples(1.4, seed=2)), bundle=HEAD), other_runtime):
        assert not diff.identical(head, b)
        assert serving(diff.compare(head, b, SETTINGS))["p50 latency, batch 8"].test.startswith(diff.STORED)
