"""The dynamic-dim sweep: every declared dim is probed at several sizes, with or without a warning."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

from ci_onnx.contracts.bundle import TensorSpec, Tolerance
from ci_onnx.contracts.results import CheckResult
from ci_onnx.contracts.target import Status
from ci_onnx.export import sweep
from ci_onnx.export.probing import Comparer

SPECS = [TensorSpec("x", ("batch", "seq", 4), "float32"), TensorSpec("ids", ("batch",), "int64", (0, 10))]
AXES = {"x": {"0": "batch", "1": "seq"}, "ids": {"0": "batch"}}
GRAPH = CheckResult("dynamic-axes", Status.PASSED, "declared dynamic axes are symbolic, the others fixed")


def _model(tmp_path: Path, nodes: list, extra: list | None = None) -> Path:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 4])
    ids = helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])
    graph = helper.make_graph(nodes, "g", [x, ids], [y], extra or [])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    path = tmp_path / "model.onnx"
    onnx.save(model, path)
    return path


def _sum_over_seq(tmp_path: Path) -> Path:
    axes = helper.make_tensor("axes", TensorProto.INT64, [1], [1])
    return _model(tmp_path, [helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=0)], [axes])


def _first_steps(tmp_path: Path, steps: int) -> Path:
    """What an unrolled ``for t in range(x.size(1))`` leaves: only the traced steps are summed."""
    consts = [
        helper.make_tensor("start", TensorProto.INT64, [1], [0]),
        helper.make_tensor("stop", TensorProto.INT64, [1], [steps]),
        helper.make_tensor("axis", TensorProto.INT64, [1], [1]),
    ]
    nodes = [
        helper.make_node("Slice", ["x", "start", "stop", "axis"], ["head"]),
        helper.make_node("ReduceSum", ["head", "axis"], ["y"], keepdims=0),
    ]
    return _model(tmp_path, nodes, consts)


def _torch(feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {"y": feeds["x"].sum(axis=1)}


def test_sizes_are_the_smallest_an_odd_one_the_export_size_and_a_larger_one() -> None:
    assert sweep.sizes(12) == (1, 7, 12, 24)
    assert sweep.sizes(2) == (1, 3, 2, 4)
    assert sweep.sizes(3) == (1, 5, 3, 6)
    assert sweep.sizes(7) == (1, 5, 7, 14)
    for n in range(2, 40):
        got = sweep.sizes(n)
        assert got[0] == 1 and n in got and max(got) > n and any(s % 2 and s not in (1, n) for s in got)


def test_points_vary_one_symbol_at_a_time() -> None:
    points = sweep.points(SPECS, AXES, 2, {"seq": 6}, seed=0)
    assert [p.probe.label for p in points] == [
        "batch = 1",
        "batch = 3",
        "batch = 4",
        "seq = 1",
        "seq = 5",
        "seq = 12",
    ]
    by = {p.probe.label: p.probe.feeds for p in points}
    assert by["batch = 3"]["x"].shape == (3, 6, 4) and by["batch = 3"]["ids"].shape == (3,)
    assert by["seq = 5"]["x"].shape == (2, 5, 4) and by["seq = 5"]["ids"].shape == (2,)
    assert by["seq = 5"]["x"].std() > 0.1  # drawn like the declared input


def test_a_graph_right_at_every_size_passes_and_records_what_was_probed(tmp_path: Path) -> None:
    comparer = Comparer(_sum_over_seq(tmp_path), _torch, None, Tolerance(), {})
    points = sweep.points(SPECS, AXES, 2, {"seq": 6}, seed=0)
    f = sweep.check(comparer, points, {"batch": 2, "seq": 6}, GRAPH, "torchscript")
    assert f.status is Status.PASSED, f.message
    assert "the graph matches torch at batch = 1, 3, 4; seq = 1, 5, 12" in f.message
    record = f.figures["sweep"]
    assert record["seq"]["sizes"] == [1, 5, 6, 12] and record["seq"]["export_size"] == 6
    assert record["seq"]["results"]["12"] == "agrees"


def test_an_unrolled_loop_that_raised_no_warning_fails_at_a_larger_size(tmp_path: Path) -> None:
    comparer = Comparer(_first_steps(tmp_path, 6), _torch, None, Tolerance(), {})
    points = sweep.points(SPECS, AXES, 2, {"seq": 6}, seed=0)
    f = sweep.check(comparer, points, {"batch": 2, "seq": 6}, GRAPH, "torchscript")
    assert f.status is Status.FAILED
    assert f.message.startswith(
        "seq is symbolic in the graph, but the graph disagrees with torch at seq = 12"
    )
    assert "exported at seq = 6" in f.message and "Python loop over seq" in f.message
    assert "dynamo" in f.message  # the way out for a TorchScript trace
    assert f.figures["sweep"]["batch"]["results"]["3"] == "agrees"
    assert f.figures["sweep"]["seq"]["results"]["12"].startswith("diverges")


def test_torch_rejecting_a_size_is_no_evidence(tmp_path: Path) -> None:
    def at_least_two(feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if feeds["x"].shape[1] < 2:
            raise ValueError("too short")
        return _torch(feeds)

    comparer = Comparer(_sum_over_seq(tmp_path), at_least_two, None, Tolerance(), {})
    points = sweep.points(SPECS, AXES, 2, {"seq": 6}, seed=0)
    f = sweep.check(comparer, points, {"batch": 2, "seq": 6}, GRAPH, "dynamo")
    assert f.status is Status.PASSED
    assert "no evidence at seq = 1" in f.message
    assert f.figures["sweep"]["seq"]["results"]["1"].startswith("inconclusive: torch rejects it")


def test_a_divergence_the_same_values_show_at_the_export_size_is_not_the_dims(tmp_path: Path) -> None:
    """At seq = 1 the values along seq are constant; cycled to the export size they still are. Where the
    graph differs from torch on those too (an all-padding row, say), the size is not the cause."""

    def off_on_constant_rows(feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        x = feeds["x"]
        constant = (x == x[:, :1]).all(axis=1)  # per row and feature: nothing varies along seq
        return {"y": x.sum(axis=1) + constant.astype(np.float32)}

    comparer = Comparer(_sum_over_seq(tmp_path), off_on_constant_rows, None, Tolerance(), {})
    points = sweep.points(SPECS, AXES, 2, {"seq": 6}, seed=0)
    f = sweep.check(comparer, points, {"batch": 2, "seq": 6}, GRAPH, "dynamo")
    assert f.status is Status.PASSED, f.message
    assert f.figures["sweep"]["seq"]["results"]["1"].startswith("inconclusive")
    assert any("the values of seq = 1 at seq = 6" in w and "not the size of seq" in w for w in f.warnings)
