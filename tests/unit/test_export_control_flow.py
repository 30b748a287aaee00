"""control-flow decides from a differential run: a suspect that never diverges is a warning."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

from ci_onnx.bundle import TensorSpec, Tolerance
from ci_onnx.export import control_flow
from ci_onnx.target import Status

SUSPECT = "TracerWarning: Converting a tensor to a Python boolean (net.py:12)"
SPECS = [TensorSpec("x", ("batch", "seq"), "float32"), TensorSpec("ids", ("batch",), "int64", (0, 10))]
AXES = {"x": {"0": "batch", "1": "seq"}, "ids": {"0": "batch"}}


def _relu(tmp_path: Path) -> Path:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq"])
    ids = helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq"])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x, ids], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "model.onnx"
    onnx.save(model, path)
    return path


def test_probes_vary_values_and_every_dynamic_dim() -> None:
    probes = control_flow.probes(SPECS, AXES, 2, {"seq": 4}, seed=0)
    labels = [p.label for p in probes]
    assert "every input at its lowest (zeros)" in labels and "a fresh random draw" in labels
    assert {"batch = 1", "batch = 5", "batch = 8", "seq = 1", "seq = 9", "seq = 16"} <= set(labels)
    by = {p.label: p.feeds for p in probes}
    assert by["seq = 9"]["x"].shape == (2, 9) and by["batch = 5"]["ids"].shape == (5,)
    assert (by["every input at its highest (ones)"]["ids"] == 9).all()  # the top of range [0, 10)
    assert not by["every input at its lowest (zeros)"]["x"].any()


def test_a_suspect_that_never_diverges_is_a_warning(tmp_path: Path) -> None:
    probes = control_flow.probes(SPECS, AXES, 2, {"seq": 4}, seed=0)
    f = control_flow.differential(
        _relu(tmp_path), [SUSPECT], lambda feeds: {"y": np.maximum(feeds["x"], 0)}, probes, Tolerance(), {}
    )
    assert f.status is Status.PASSED and f.warnings == (SUSPECT,)
    assert f"matched torch on {len(probes)} probe(s)" in f.message


def test_a_branch_on_a_value_is_convicted_by_the_probe_that_flips_it(tmp_path: Path) -> None:
    def branchy(feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        x = feeds["x"]
        return {"y": np.maximum(x, 0) if x.sum() >= 0 else np.minimum(x, 0)}

    probes = control_flow.probes(SPECS, AXES, 2, {"seq": 4}, seed=0)
    f = control_flow.differential(_relu(tmp_path), [SUSPECT], branchy, probes, Tolerance(), {})
    assert f.status is Status.FAILED
    assert "disagrees with torch on" in f.message and "net.py:12" in f.message
    assert f.figures["diverged_on"] in {p.label for p in probes}


def test_a_probe_torch_rejects_is_no_evidence(tmp_path: Path) -> None:
    def only_seq_4(feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if feeds["x"].shape[1] != 4:
            raise ValueError("positions")
        return {"y": np.maximum(feeds["x"], 0)}

    probes = control_flow.probes(SPECS, AXES, 2, {"seq": 4}, seed=0)
    f = control_flow.differential(_relu(tmp_path), [SUSPECT], only_seq_4, probes, Tolerance(), {})
    assert f.status is Status.PASSED
    assert any(s.startswith("seq = 16 (torch: ValueError") for s in f.figures["skipped_probes"])
