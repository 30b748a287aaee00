"""The walk and the classification of a triage, on values made by hand: each fault class from the
comparisons that define it, and the first node out of tolerance whose inputs are within it."""

from __future__ import annotations

import math

import numpy as np

from ci_onnx.contracts.triage_contract import FaultClass
from ci_onnx.triage import classify, walk
from ci_onnx.triage.graph import Graph, Node

ATOL, RTOL = 1e-4, 1e-3


def chain() -> Graph:
    """x → a (Mul) → b (Relu) → c (Mul) → y (Add); w an initializer."""
    nodes = (
        Node("na", "Mul", ("x", "w"), ("a",), module="down"),
        Node("nb", "Relu", ("a",), ("b",), module="act"),
        Node("nc", "Mul", ("b", "w"), ("c",), module="up", source="model.py:12"),
        Node("ny", "Add", ("c", "w"), ("y",), module="head"),
    )
    return Graph(nodes, ("x",), ("y",), frozenset({"w"}))


def values(**overrides: float) -> dict[str, np.ndarray]:
    base = {"x": 1.0, "a": 2.0, "b": 2.0, "c": 4.0, "y": 6.0}
    base.update(overrides)
    return {k: np.full((1, 4), v, np.float32) for k, v in base.items()}


def test_error_is_the_share_of_the_tolerance_with_atol_scaled_by_the_magnitude() -> None:
    ref = np.array([1000.0, 0.5], np.float32)
    e = walk.error(ref + np.array([0.05, 0.0], np.float32), ref, ATOL, RTOL)
    assert e.max_abs == np.float32(1000.05) - np.float32(1000.0)
    # bound at the element: atol·1000 + rtol·1000 = 1.1, so 0.05 is within
    assert 0 < e.share < 1 and not e.out
    # below 1 the bound is the cell's own: 1e-4 + 1e-3·0.5 = 6e-4
    assert not walk.error(np.array([0.5005]), np.array([0.5]), ATOL, RTOL).out
    assert walk.error(np.array([0.5007]), np.array([0.5]), ATOL, RTOL).out
    assert walk.error(np.zeros(3), np.zeros(2), ATOL, RTOL).share == math.inf
    assert walk.error(np.array([1, 2]), np.array([1, 3]), ATOL, RTOL).share == math.inf
    assert not walk.error(np.array([np.nan, np.inf]), np.array([np.nan, np.inf]), ATOL, RTOL).out
    assert walk.error(np.array([np.nan]), np.array([1.0]), ATOL, RTOL).out


def test_the_first_divergence_is_the_first_node_out_whose_inputs_are_within() -> None:
    g = chain()
    errs = walk.errors(values(c=5.0, y=7.0), values(), ATOL, RTOL)
    assert walk.first_divergence(g, errs).name == "nc"
    rows = walk.path(g, g.node("nc"), "y", errs)
    assert [r.node for r in rows] == ["na", "nb", "nc", "ny"]
    assert [r.share > 1 for r in rows] == [False, False, True, True]
    assert walk.first_divergence(g, walk.errors(values(), values(), ATOL, RTOL)) is None


def test_an_input_no_reference_holds_does_not_hide_the_first_divergence() -> None:
    g = chain()
    got, ref = values(c=5.0, y=7.0), values()
    del got["b"]  # b was fused away in this view
    assert walk.first_divergence(g, walk.errors(got, ref, ATOL, RTOL)).name == "nc"


def sample(**kw: object) -> classify.Sample:
    g = chain()
    ref = values()
    base: dict[str, object] = {
        "output": "y", "atol": ATOL, "rtol": RTOL, "graph": g, "torch_out": ref["y"], "as_run": ref["y"],
        "reference": ref, "off": ref, "release": "1.32.0",
    }  # fmt: skip
    base.update(kw)
    return classify.Sample(**base)  # type: ignore[arg-type]


def test_the_target_differing_with_optimizations_off_too_is_a_runtime_fault_at_that_node() -> None:
    bad = values(c=5.0, y=7.0)
    f = classify.classify(sample(off=bad, as_run=bad["y"]))
    assert (f.fault, f.node.name if f.node else "") == (FaultClass.RUNTIME, "nc")
    assert f.repro_inputs == ("b", "w") and f.repro_outputs == ("c",)
    assert "onnxruntime 1.32.0" in f.summary and "up at model.py:12" in f.summary
    assert any(
        e.startswith("from nc (227× the tolerance) the error shrinks to 152× at y") for e in f.evidence
    ), f.evidence


def test_the_reference_differing_from_torch_is_an_export_fault_at_the_module_that_differs() -> None:
    torch = {"a": values()["a"], "c": values(c=4.5)["c"], "y": values(y=6.5)["y"]}
    f = classify.classify(sample(torch=torch, torch_out=torch["y"]))
    assert (f.fault, f.node.name if f.node else "") == (FaultClass.EXPORT, "nc")
    assert f.repro_expected["c"][0, 0] == 4.5  # the reproduction expects what PyTorch computed


def test_only_as_run_differing_is_an_optimization_fault_naming_the_nodes_it_replaced() -> None:
    fused = Graph(
        (Node("na", "Mul", ("x", "w"), ("a",)), Node("fused", "FusedMulRelu", ("a", "w"), ("c",)),
         Node("ny", "Add", ("c", "w"), ("y",))),
        ("x",), ("y",), frozenset({"w"}),
    )  # fmt: skip
    opt = values(c=5.0, y=7.0)
    f = classify.classify(sample(as_run=opt["y"], optimized=(fused, opt)))
    assert (f.fault, f.node.name if f.node else "") == (FaultClass.OPTIMIZATION, "fused")
    assert "nb (Relu), nc (Mul)" in f.summary
    assert f.repro_inputs == ("a",) and f.as_run


def test_errors_within_a_few_tolerances_that_grow_smoothly_are_a_tolerance_fault() -> None:
    near = values(a=2.0002, b=2.0002, c=4.0005, y=6.0008)
    f = classify.classify(sample(off=near, as_run=near["y"]))
    assert f.fault is FaultClass.TOLERANCE and f.repro_graph == ""
    atol = f.suggested["atol"]
    assert walk.error(near["y"], values()["y"], atol, RTOL).share <= 1  # the suggestion passes
    assert atol < 2 * float(np.max(np.abs(near["y"] - values()["y"])))


def test_without_the_onnx_reference_the_triage_stops_and_says_why() -> None:
    f = classify.classify(sample(reference=None, as_run=values(y=9.0)["y"]))
    assert f.fault is None and "ReferenceEvaluator" in f.stopped


def test_errors_at_float32_rounding_are_a_tolerance_fault_even_past_a_few_tolerances() -> None:
    near = {k: v * np.float32(1 + 5e-5) for k, v in values().items()}  # rounding, yet 50-300x an atol of 1e-6
    f = classify.classify(sample(atol=1e-6, rtol=0.0, off=near, as_run=near["y"]))
    assert f.fault is FaultClass.TOLERANCE, (f.summary, f.stopped)
    assert any("at float32 rounding" in e for e in f.evidence), f.evidence


def test_a_wrong_value_past_a_few_tolerances_is_not_rounding() -> None:
    bad = values(c=4.01, y=6.01)  # 2.5e-3 relative at c: a wrong result, not rounding
    f = classify.classify(sample(atol=1e-6, rtol=0.0, off=bad, as_run=bad["y"]))
    assert f.fault is FaultClass.RUNTIME and f.node is not None and f.node.name == "nc"
