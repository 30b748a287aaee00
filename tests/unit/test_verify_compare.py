"""The verdict logic: parity, decisions, fallback budget, overall status, placement summaries."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ci_onnx.contracts.bundle import Tolerance
from ci_onnx.contracts.results import PlacedNode, Placement
from ci_onnx.contracts.target import Status
from ci_onnx.observer.placement import CPU, from_verbose_log, profile_nodes, summarise, verbose_log_nodes
from ci_onnx.verify import compare

TOL = Tolerance(atol=1e-4, rtol=1e-3)
NAN, INF = math.nan, math.inf


def test_parity_within_tolerance_reports_figures() -> None:
    ref = np.array([1.0, -2.0, 0.0], dtype=np.float32)
    got = ref + np.array([5e-4, -1e-3, 5e-5], dtype=np.float32)
    p = compare.parity("y", got, ref, TOL)
    assert p.passed and p.out_of_tolerance == 0 and p.elements == 3
    assert p.max_abs == pytest.approx(1e-3, rel=1e-3)
    assert p.max_rel == pytest.approx(5e-4, rel=1e-3)  # the zero reference is left out of max_rel


def test_parity_counts_elements_out_of_tolerance() -> None:
    ref = np.zeros((2, 3))
    got = ref.copy()
    got[0, 1] = 0.5
    got[1, 2] = 2e-4  # just over atol for a zero reference
    p = compare.parity("y", got, ref, TOL)
    assert not p.passed and p.out_of_tolerance == 2 and p.max_abs == pytest.approx(0.5)


def test_rtol_scales_with_the_reference() -> None:
    ref = np.array([1000.0])
    assert compare.parity("y", ref + 1.0, ref, TOL).passed  # 1 ≤ 1e-4 + 1e-3·1000
    assert not compare.parity("y", ref + 1.2, ref, TOL).passed


@pytest.mark.parametrize(
    ("got", "ref", "bad"),
    [
        ([NAN, 1.0], [NAN, 1.0], 0),  # NaN where the reference has NaN is equal
        ([INF, -INF], [INF, -INF], 0),
        ([NAN, 1.0], [0.0, 1.0], 1),
        ([0.0, 1.0], [NAN, 1.0], 1),
        ([INF, 1.0], [-INF, 1.0], 1),
        ([INF, 1.0], [1e30, 1.0], 1),
        ([NAN, INF], [INF, NAN], 2),
    ],
)
def test_nan_and_inf_are_compared_as_such(got: list[float], ref: list[float], bad: int) -> None:
    p = compare.parity("y", np.array(got), np.array(ref), TOL)
    assert p.out_of_tolerance == bad and p.nonfinite_mismatches == bad
    assert math.isfinite(p.max_abs) and math.isfinite(p.max_rel)


def test_shape_mismatch_fails_with_both_shapes() -> None:
    p = compare.parity("y", np.zeros((2, 3)), np.zeros((2, 4)), TOL)
    assert not p.passed and "[2, 3]" in p.shape_mismatch and "[2, 4]" in p.shape_mismatch


def test_integer_and_bool_outputs_compare_exactly_enough() -> None:
    assert compare.parity("i", np.array([1, 2, 3]), np.array([1, 2, 3]), TOL).passed
    assert not compare.parity("b", np.array([True, False]), np.array([True, True]), TOL).passed


def test_decisions_count_rows_whose_top_k_changed() -> None:
    ref = np.array([[0.1, 0.9, 0.0], [0.8, 0.1, 0.1], [0.2, 0.3, 0.5]])
    got = ref.copy()
    got[1] = [0.1, 0.8, 0.1]
    d = compare.decisions("logits", got, ref, 1)
    assert (d.changed, d.total) == (1, 3)
    # top-2 as a set: swapping the order of the two best classes is no change
    got2 = ref.copy()
    got2[0] = [0.95, 0.9, 0.0]
    assert compare.decisions("logits", got2, ref, 2).changed == 0


def test_decisions_over_leading_axes_and_nan() -> None:
    ref = np.zeros((2, 3, 4))
    ref[..., 1] = 1.0
    got = ref.copy()
    got[1, 2, 1] = NAN
    d = compare.decisions("tokens", got, ref, 1)
    assert (d.changed, d.total) == (1, 6)
    merged = compare.merge_decisions([d, compare.decisions("tokens", ref, ref, 1)])
    assert merged is not None and (merged.changed, merged.total) == (1, 12)


def _placement(cpu_us: float, other_us: float, fallback: tuple[PlacedNode, ...] = ()) -> Placement:
    return Placement(
        source="profile",
        nodes_by_provider={"CPUExecutionProvider": len(fallback), "OpenVINOExecutionProvider": 3},
        time_us_by_provider={"CPUExecutionProvider": cpu_us, "OpenVINOExecutionProvider": other_us},
        fallback_nodes=fallback,
    )


def test_fallback_budget_on_accelerators_only() -> None:
    det = PlacedNode("det", "Det", "CPUExecutionProvider", 10.0)
    within = _placement(4.0, 96.0, (det,))
    status, text = compare.fallback_verdict(within, accelerator=True, max_time_share=0.05, strict=False)
    assert status == Status.PASSED and "det (Det)" in text
    over = _placement(10.0, 90.0, (det,))
    status, text = compare.fallback_verdict(over, accelerator=True, max_time_share=0.05, strict=False)
    assert status == Status.FAILED and "10.0%" in text and "det (Det)" in text
    status, _ = compare.fallback_verdict(over, accelerator=False, max_time_share=0.05, strict=False)
    assert status == Status.PASSED
    status, text = compare.fallback_verdict(within, accelerator=True, max_time_share=0.05, strict=True)
    assert status == Status.FAILED and "strict" in text


def test_overall_status_precedence() -> None:
    P, F, E, X = Status.PASSED, Status.FAILED, Status.ERROR, Status.EXPECTED
    assert compare.overall([P, P]) == P
    assert compare.overall([P, X]) == X
    assert compare.overall([X, F]) == F
    assert compare.overall([F, E, P]) == E


def test_profile_and_assignment_info_combine() -> None:
    events = [
        {"cat": "Session", "name": "model_run", "dur": 900},
        {"cat": "Node", "name": "sub_0_kernel_time", "dur": 90,
         "args": {"provider": "OpenVINOExecutionProvider", "op_name": "OpenVINO-EP-subgraph_1"}},
        {"cat": "Node", "name": "det_kernel_time", "dur": 6, "args": {"provider": CPU, "op_name": "Det"}},
        {"cat": "Node", "name": "det_kernel_time", "dur": 4, "args": {"provider": CPU, "op_name": "Det"}},
        {"cat": "Node", "name": "det_fence_before", "dur": 0, "args": {"op_name": "Det"}},
    ]  # fmt: skip
    profiled = profile_nodes(events)
    assert {(n.name, n.provider, n.time_us) for n in profiled} == {
        ("sub_0", "OpenVINOExecutionProvider", 90.0),
        ("det", "CPUExecutionProvider", 10.0),
    }
    assigned = [("OpenVINOExecutionProvider", "mm", "MatMul"), ("OpenVINOExecutionProvider", "relu", "Relu"),
                ("CPUExecutionProvider", "det", "Det")]  # fmt: skip
    p = summarise("OpenVINOExecutionProvider", profiled, assigned)
    assert p.source == "assignment-info"
    assert p.nodes_by_provider == {"CPUExecutionProvider": 1, "OpenVINOExecutionProvider": 2}
    assert [(n.name, n.op_type, n.time_us) for n in p.fallback_nodes] == [("det", "Det", 10.0)]
    assert p.cpu_time_share == pytest.approx(0.1)
    only_profile = summarise("OpenVINOExecutionProvider", profiled, None)
    assert only_profile.source == "profile" and [n.name for n in only_profile.fallback_nodes] == ["det"]
    assert summarise("CPUExecutionProvider", profiled, None).fallback_nodes == ()


VERBOSE_LOG = """\
2026-11-29 21:21:23.617 [V:onnxruntime:, session_state.cc:1307 VerifyEachNodeIsAssignedToAnEp] Node placements
2026-11-29 21:21:23.617 [V:onnxruntime:, session_state.cc:1313 VerifyEachNodeIsAssignedToAnEp]  \
Node(s) placed on [OpenVINOExecutionProvider]. Number of nodes: 1
2026-11-29 21:21:23.617 [V:onnxruntime:, session_state.cc:1315 VerifyEachNodeIsAssignedToAnEp]   \
OpenVINO-EP-subgraph_1 (OpenVINOExecutionProvider_OpenVINO-EP-subgraph_1_0)
\x1b[0;37m2026-11-29 21:21:23.617 [V:onnxruntime:, session_state.cc:1313 VerifyEachNodeIsAssignedToAnEp]  \
Node(s) placed on [CPUExecutionProvider]. Number of nodes: 2\x1b[m
2026-11-29 21:21:23.617 [V:onnxruntime:, session_state.cc:1315 VerifyEachNodeIsAssignedToAnEp]   Det (det)
2026-11-29 21:21:23.617 [V:onnxruntime:, session_state.cc:1315 VerifyEachNodeIsAssignedToAnEp]   Hardmax (hm)
2026-11-29 21:21:23.618 [V:onnxruntime:, session_state.cc:175 CreateGraphInfo] SaveMLValueNameIndexMapping
"""


def test_verbose_log_placement() -> None:
    counts, nodes = verbose_log_nodes(VERBOSE_LOG)
    assert counts == {"OpenVINOExecutionProvider": 1, "CPUExecutionProvider": 2}
    assert nodes[1:] == [(CPU, "det", "Det"), (CPU, "hm", "Hardmax")]
    p = from_verbose_log("OpenVINOExecutionProvider", VERBOSE_LOG)
    assert p is not None and p.source == "verbose-log" and p.time_us_by_provider == {}
    assert [(n.name, n.op_type) for n in p.fallback_nodes] == [("det", "Det"), ("hm", "Hardmax")]
    # Without timings the budget applies to the share of nodes.
    status, text = compare.fallback_verdict(p, accelerator=True, max_time_share=0.5, strict=False)
    assert status == Status.FAILED and "66.7% of nodes (no timings)" in text
    all_cpu = (
        "x [V:onnxruntime:, s.cc:1 VerifyEachNodeIsAssignedToAnEp]  "
        "All nodes placed on [CPUExecutionProvider]. Number of nodes: 5"
    )
    assert verbose_log_nodes(all_cpu) == ({CPU: 5}, [])
    assert from_verbose_log(CPU, "no placements here") is None


def test_the_worst_elements_share_of_its_tolerance_tells_a_large_max_rel_covered_by_atol() -> None:
    from ci_onnx.verify.compare import parity as parity_of

    ref = np.array([1e-3, 1.0], dtype=np.float32)
    got = np.array([1e-3 + 5e-5, 1.0 + 2e-4], dtype=np.float32)
    p = parity_of("y", got, ref, Tolerance(atol=1e-4, rtol=1e-3))
    assert p.passed and p.max_rel > 0.04  # 5e-5 on 1e-3: a max rel of 5 %, within atol
    assert p.worst_share is not None and 0.4 < p.worst_share < 0.6  # 5e-5 of the 1.01e-4 allowed there
    bad = parity_of("y", got * 1.01, ref, Tolerance(atol=1e-4, rtol=1e-3))
    assert not bad.passed and bad.worst_share is not None and bad.worst_share > 1


def test_without_timings_the_message_names_the_ops_that_are_more_than_shape_arithmetic_first() -> None:
    """MiniLM on onnxruntime-web's WebGPU: its int64 shape ops stay on the CPU by design, IsNaN for
    want of a kernel; the message leads with IsNaN, and counts per op, the verdict unchanged."""
    nodes = [PlacedNode(f"shape_{i}", "Shape", CPU, 0.0) for i in range(12)]
    nodes += [PlacedNode(f"isnan_{i}", "IsNaN", CPU, 0.0) for i in range(3)]
    p = Placement("verbose-log", {"JsExecutionProvider": 60, CPU: 15}, {}, tuple(nodes))
    status, text = compare.fallback_verdict(p, accelerator=True, max_time_share=0.05, strict=False)
    assert status == Status.FAILED and "20.0% of nodes (no timings)" in text
    assert "(by op: IsNaN 3, Shape 12)" in text
    assert text.index("isnan_0 (IsNaN)") < text.index("shape_0 (Shape)")
    timed = Placement("profile", {"X": 1, CPU: 2}, {"X": 10.0, CPU: 90.0}, tuple(nodes[:1] + nodes[-1:]))
    _, text = compare.fallback_verdict(timed, accelerator=True, max_time_share=0.05, strict=False)
    assert text.index("shape_0") < text.index("isnan_2"), "with node times the order is by time, as given"
