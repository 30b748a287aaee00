"""reference-parity on a hand-built model: tolerance, NaN, and a graph whose batch is fixed."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

from ci_onnx.contracts.bundle import Tolerance
from ci_onnx.contracts.target import Status
from ci_onnx.export import parity


def _relu(tmp_path: Path, batch: int | str) -> Path:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 3])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "model.onnx"
    onnx.save(model, path)
    return path


def _one_set(x: np.ndarray, y: np.ndarray) -> list[tuple[str, dict[str, np.ndarray], dict[str, np.ndarray]]]:
    return [("test_data_set_0", {"x": x}, {"y": y})]


def test_nan_meets_nan_and_inf_meets_the_same_inf(tmp_path: Path) -> None:
    path = _relu(tmp_path, "batch")
    x = np.array([[np.nan, np.inf, 1.0], [-np.inf, 2.0, np.nan]], np.float32)
    got = np.maximum(x, 0)  # what onnxruntime computes: NaN stays NaN, -inf becomes 0
    ok = parity.reference_parity(path, _one_set(x, got), Tolerance(), {})
    assert ok.status is Status.PASSED, ok.message
    wrong = got.copy()
    wrong[0, 1] = -np.inf  # +inf against -inf, and a NaN against a number
    wrong[1, 2] = 0.0
    bad = parity.reference_parity(path, _one_set(x, wrong), Tolerance(), {})
    assert bad.status is Status.FAILED
    assert "2 of 6 elements out of tolerance (2 NaN/Inf mismatches)" in bad.message


def test_figures_of_a_shape_mismatch_and_infinities_stay_json(tmp_path: Path) -> None:
    import json

    from ci_onnx.export import writer

    path = _relu(tmp_path, "batch")
    x = np.ones((2, 3), np.float32)
    f = parity.reference_parity(path, _one_set(x, np.ones((3, 2), np.float32)), Tolerance(), {})
    assert f.status is Status.FAILED and "got shape [2, 3], the reference has [3, 2]" in f.message
    safe = writer.json_safe(f.figures)
    assert safe["test_data_set_0/y"]["max_abs"] == "NaN"
    json.dumps(safe, allow_nan=False)
    assert writer.json_safe({"a": (np.float32(np.inf), -math.inf, 1.5)}) == {
        "a": ["Infinity", "-Infinity", 1.5]
    }


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


def test_a_tolerance_tighter_than_float32_noise_is_not_blamed_on_the_model(tmp_path: Path) -> None:
    """torch and onnxruntime that differ in the last digits fail a zero tolerance; the message said
    "so the model itself is wrong"."""
    path = _relu(tmp_path, "batch")
    x = np.linspace(0.5, 2, 12, dtype=np.float32).reshape(4, 3)
    last_digits = np.nextafter(x, np.float32(3))  # one ulp: what another order of float32 sums gives
    tight = parity.reference_parity(path, _one_set(x, last_digits), Tolerance(atol=0.0, rtol=0.0), {})
    assert tight.status is Status.FAILED
    assert "loosen verify.tolerance (this says nothing against the model)" in tight.message
    assert "the exported graph is wrong" not in tight.message and tight.figures["float32_noise"] is True
    wrong = parity.reference_parity(path, _one_set(x, x * 1.01), Tolerance(atol=0.0, rtol=0.0), {})
    assert "by more than float32 arithmetic explains, so the exported graph is wrong" in wrong.message
    assert "float32_noise" not in wrong.figures


def test_an_input_the_forward_changed_in_place_is_a_warning_or_named_in_the_failure(tmp_path: Path) -> None:
    path = _relu(tmp_path, "batch")
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
    kept = parity.reference_parity(path, _one_set(x, np.maximum(x, 0)), Tolerance(), {}, mutated=("x",))
    assert kept.status is Status.PASSED
    assert "changes input(s) 'x' in place" in kept.warnings[0] and "fresh copies" in kept.warnings[0]
    assert kept.figures["mutated_inputs"] == ["x"]
    lost = parity.reference_parity(path, _one_set(x, np.maximum(2 * x, 0)), Tolerance(), {}, mutated=("x",))
    assert lost.status is Status.FAILED and "changes input(s) 'x' in place" in lost.message


def test_a_reference_that_disagrees_with_itself_is_said_to_be_random(tmp_path: Path) -> None:
    path = _relu(tmp_path, "batch")
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
    rng = np.random.default_rng(0)

    def noisy(feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {"y": np.maximum(feeds["x"], 0) + rng.normal(0, 0.01, feeds["x"].shape).astype(np.float32)}

    f = parity.reference_parity(path, _one_set(x, noisy({"x": x})), Tolerance(), {}, rerun=noisy)
    assert f.status is Status.FAILED
    assert "torch disagrees with itself on the same inputs" in f.message and "random in eval" in f.message
    steady = parity.reference_parity(path, _one_set(x, x), Tolerance(), {}, rerun=lambda feeds: {"y": x})
    assert "disagrees with itself" not in steady.message
