"""reference-parity on a hand-built model: tolerance, NaN, and a graph whose batch is fixed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

from ci_onnx.bundle import Tolerance
from ci_onnx.export import parity
from ci_onnx.target import Status


def _relu(tmp_path: Path, batch: int | str) -> Path:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 3])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "model.onnx"
    onnx.save(model, path)
    return path


def test_compare_counts_elements_out_of_tolerance_and_nan() -> None:
    ref = np.array([1.0, 100.0, 0.0], np.float32)
    tol = Tolerance(atol=1e-4, rtol=1e-3)
    assert parity.compare(ref.copy(), ref, tol)["out_of_tolerance"] == 0
    within = parity.compare(np.array([1.0, 100.05, 0.0], np.float32), ref, tol)
    assert within["out_of_tolerance"] == 0  # 0.05 <= 1e-4 + 1e-3 * 100
    stats = parity.compare(np.array([1.0, 100.2, np.nan], np.float32), ref, tol)
    assert stats["out_of_tolerance"] == 2  # 0.2 > 0.1001, and NaN never passes
    assert parity.compare(np.zeros(2, np.float32), ref, tol)["shape_mismatch"] == 1


def test_parity_passes_then_fails_on_a_wrong_reference(tmp_path: Path) -> None:
    path = _relu(tmp_path, "batch")
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
    ok = parity.reference_parity(
        path, [("test_data_set_0", {"x": x}, {"y": np.maximum(x, 0)})], Tolerance(), {}
    )
    assert ok.status is Status.PASSED
    bad = parity.reference_parity(path, [("test_data_set_0", {"x": x}, {"y": x})], Tolerance(), {})
    assert (
        bad.status is Status.FAILED and "test_data_set_0/y: 6 of 12 elements out of tolerance" in bad.message
    )
    loose = parity.reference_parity(
        path, [("test_data_set_0", {"x": x}, {"y": x})], Tolerance(), {"y": Tolerance(atol=2.0)}
    )
    assert loose.status is Status.PASSED


def test_a_graph_with_a_fixed_batch_is_run_in_slices(tmp_path: Path) -> None:
    path = _relu(tmp_path, 1)
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
    f = parity.reference_parity(
        path, [("test_data_set_0", {"x": x}, {"y": np.maximum(x, 0)})], Tolerance(), {}
    )
    assert f.status is Status.PASSED, f.message
