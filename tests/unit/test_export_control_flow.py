"""control-flow decides from a differential run: a suspect that never diverges is a warning."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

from ci_onnx.contracts.bundle import TensorSpec, Tolerance
from ci_onnx.contracts.target import Status
from ci_onnx.export import control_flow
from ci_onnx.export.probing import Comparer

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


def _comparer(path: Path, torch_run: object, self_check: object = None) -> Comparer:
    return Comparer(path, torch_run, self_check, Tolerance(), {})  # type: ignore[arg-type]


def test_probes_vary_values_drawn_like_the_inputs_not_only_constants() -> None:
    samples = {"x": np.full((2, 4), 3.0, np.float32), "ids": np.array([1, 2])}
    probes = control_flow.probes(SPECS, 2, {"seq": 4}, seed=0, samples=samples)
    labels = [p.label for p in probes]
    assert labels[:3] == ["a fresh random draw", "another random draw", "the real samples"]
    assert "every input at its lowest (zeros)" in labels
    assert not any("=" in label for label in labels), "sizes are the sweep's, under dynamic-axes"
    by = {p.label: p.feeds for p in probes}
    assert by["a fresh random draw"]["x"].std() > 0.1  # drawn like the declared input, not a constant
    assert (by["every input at its highest (ones)"]["ids"] == 9).all()  # the top of range [0, 10)
    assert not by["every input at its lowest (zeros)"]["x"].any()


def test_a_suspect_that_never_diverges_is_a_warning(tmp_path: Path) -> None:
    probes = control_flow.probes(SPECS, 2, {"seq": 4}, seed=0)
    relu = _comparer(_relu(tmp_path), lambda feeds: {"y": np.maximum(feeds["x"], 0)})
    f = control_flow.differential(relu, [SUSPECT], probes)
    assert f.status is Status.PASSED and f.warnings == (SUSPECT,)
    assert f"matched torch on {len(probes)} probe(s)" in f.message


def _branchy(feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    x = feeds["x"]
    return {"y": np.maximum(x, 0) if x.sum() >= 0 else np.minimum(x, 0)}


def test_a_branch_on_a_value_is_convicted_by_the_probe_that_flips_it(tmp_path: Path) -> None:
    probes = control_flow.probes(SPECS, 2, {"seq": 4}, seed=0)
    f = control_flow.differential(_comparer(_relu(tmp_path), _branchy, _branchy_f64), [SUSPECT], probes)
    assert f.status is Status.FAILED
    assert "disagrees with torch on" in f.message and "net.py:12" in f.message
    assert "torch float32 against torch float64 on the same probe" in f.message  # what was compared
    assert f.figures["diverged_on"] in {p.label for p in probes}


def _branchy_f64(feeds: dict[str, np.ndarray]) -> tuple[str, dict[str, np.ndarray]]:
    wide = {k: v.astype(np.float64) if v.dtype.kind == "f" else v for k, v in feeds.items()}
    return "torch float32 against torch float64", _branchy(wide)


def test_a_divergence_torch_shows_against_itself_convicts_nothing(tmp_path: Path) -> None:
    """An ill-conditioned probe (a normalisation of a constant): torch float32 and float64 disagree."""

    def unstable(feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {"y": np.maximum(feeds["x"], 0) + (0.5 if feeds["x"].std() == 0 else 0.0)}

    def itself(feeds: dict[str, np.ndarray]) -> tuple[str, dict[str, np.ndarray]]:
        return "torch float32 against torch float64", {"y": np.maximum(feeds["x"], 0).astype(np.float64)}

    probes = control_flow.probes(SPECS, 2, {"seq": 4}, seed=0)
    f = control_flow.differential(_comparer(_relu(tmp_path), unstable, itself), [SUSPECT], probes)
    assert f.status is Status.PASSED, f.message
    ill = [s for s in f.figures["skipped_probes"] if "ill-conditioned" in s]
    assert ill and all("zeros" in s or "ones" in s for s in ill)
    assert "torch float32 against torch float64 already differ" in ill[0]


def test_a_divergence_the_other_exporter_reproduces_is_not_blamed_on_the_trace(tmp_path: Path) -> None:
    probes = control_flow.probes(SPECS, 2, {"seq": 4}, seed=0)
    comparer = _comparer(_relu(tmp_path), _branchy, _branchy_f64)
    same_graph = comparer.graph  # dynamo's graph gives what this one gives
    f = control_flow.differential(comparer, [SUSPECT], probes, same_graph)
    assert f.status is Status.PASSED, f.message
    assert any("and so does the dynamo export" in w and "not blamed on the branch" in w for w in f.warnings)
    no_graph = control_flow.differential(comparer, [SUSPECT], probes, lambda feeds: None)
    assert no_graph.status is Status.FAILED  # dynamo could not export it: no evidence against the trace


def test_a_probe_torch_rejects_is_no_evidence(tmp_path: Path) -> None:
    def no_negatives(feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if (feeds["x"] < 0).all():
            raise ValueError("positions")
        return {"y": np.maximum(feeds["x"], 0)}

    probes = control_flow.probes(SPECS, 2, {"seq": 4}, seed=0)
    probes.append(control_flow.Probe("all negative", {"x": -np.ones((2, 4), np.float32), "ids": np.zeros(2)}))
    f = control_flow.differential(_comparer(_relu(tmp_path), no_negatives), [SUSPECT], probes)
    assert f.status is Status.PASSED
    assert any(
        s.startswith("all negative (torch rejects it (ValueError") for s in f.figures["skipped_probes"]
    )


def test_a_model_onnxruntime_cannot_load_is_not_judged() -> None:
    f = control_flow.differential("bad file", [SUSPECT], [])
    assert f.status is Status.SKIPPED and "bad file" in f.message
