"""Graph checks on small hand-built ONNX models (no torch)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from ci_onnx.contracts.bundle import TensorSpec
from ci_onnx.contracts.target import Status
from ci_onnx.export import checks


def _model(nodes: list[onnx.NodeProto], *, opset: int = 17, inits: list[onnx.TensorProto] | None = None,
           in_shape: list[int | str] | None = None, out_name: str = "y") -> onnx.ModelProto:  # fmt: skip
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, in_shape or ["batch", 4])
    y = helper.make_tensor_value_info(out_name, TensorProto.FLOAT, in_shape or ["batch", 4])
    graph = helper.make_graph(nodes, "g", [x], [y], initializer=inits or [])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def test_opset_names_both_numbers_and_the_dynamo_reason() -> None:
    m = _model([helper.make_node("Relu", ["x"], ["y"])], opset=18)
    f = checks.opset(m, 17, "dynamo")
    assert f.status is Status.FAILED
    assert "asked for opset 17 but the file is at opset 18" in f.message and "down-conversion" in f.message
    assert checks.opset(m, 18, "dynamo").status is Status.PASSED


def test_dropout_with_constant_true_training_mode_fails_train_mode() -> None:
    ratio = numpy_helper.from_array(np.array(0.5, np.float32), "ratio")
    for flag, expected in ((True, Status.FAILED), (False, Status.PASSED)):
        train = numpy_helper.from_array(np.array(flag), "train")
        m = _model(
            [helper.make_node("Dropout", ["x", "ratio", "train"], ["y"], name="drop")], inits=[ratio, train]
        )
        f = checks.train_mode(m)
        assert f.status is expected
    assert "Dropout 'drop'" in checks.train_mode(
        _model(
            [helper.make_node("Constant", [], ["t"], value=numpy_helper.from_array(np.array(True))),
             helper.make_node("Dropout", ["x", "ratio", "t"], ["y"], name="drop")],
            inits=[ratio],
        )
    ).message  # fmt: skip


def test_batch_norm_training_mode_attribute_fails_train_mode() -> None:
    params = [numpy_helper.from_array(np.ones(4, np.float32), n) for n in ("s", "b", "m", "v")]
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], training_mode=1)
    assert checks.train_mode(_model([node], inits=params)).status is Status.FAILED
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"])
    assert checks.train_mode(_model([node], inits=params)).status is Status.PASSED


def test_dynamic_axes_declared_must_be_symbolic_and_symbolic_names_must_be_declared() -> None:
    spec = TensorSpec("x", ("batch", 4), "float32")
    fixed = _model([helper.make_node("Relu", ["x"], ["y"])], in_shape=[1, 4])
    f = checks.dynamic_axes(fixed, [spec], {"x": {"0": "batch"}})
    assert f.status is Status.FAILED and "declared dynamic but the graph fixes it at 1" in f.message
    f = checks.dynamic_axes(fixed, [spec], {})
    assert f.status is Status.FAILED and "model.dynamic_axes.x: {0: batch}" in f.message
    dynamic = _model([helper.make_node("Relu", ["x"], ["y"])])
    assert checks.dynamic_axes(dynamic, [spec], {"x": {"0": "batch"}}).status is Status.PASSED
    loose = _model([helper.make_node("Relu", ["x"], ["y"])], in_shape=["batch", "n"])
    f = checks.dynamic_axes(loose, [spec], {"x": {"0": "batch"}})
    assert f.status is Status.FAILED and "should be fixed at 4" in f.message


def test_outputs_count_names_and_clashes() -> None:
    m = _model([helper.make_node("Relu", ["x"], ["y"])])
    assert checks.outputs(m, ["y"]).status is Status.PASSED
    f = checks.outputs(m, ["y", "z"])
    assert f.status is Status.FAILED and "declares 2 output(s)" in f.message
    f = checks.outputs(m, ["logits"])
    assert f.status is Status.FAILED and "named ['y']" in f.message
    clash = _model([helper.make_node("Identity", ["x"], ["x"])], out_name="x")
    f = checks.outputs(clash, ["x"])
    assert f.status is Status.FAILED and "clash" in f.message


def test_an_output_named_like_an_input_that_the_exporter_renamed_is_a_clear_error() -> None:
    x = helper.make_tensor_value_info("x.1", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    graph = helper.make_graph([helper.make_node("Relu", ["x.1"], ["x"])], "g", [x], [y])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    f = checks.outputs(m, ["x"], ["x"])
    assert f.status is Status.FAILED
    assert "inputs are ['x.1'], not ['x']" in f.message and "clash with the input" in f.message


def test_graph_warns_when_nodes_far_outnumber_modules(tmp_path: Path) -> None:
    nodes = [helper.make_node("Relu", ["x"], ["a0"])] + [
        helper.make_node("Relu", [f"a{i}"], [f"a{i + 1}"]) for i in range(45)
    ]
    nodes.append(helper.make_node("Identity", ["a45"], ["y"]))
    m = _model(nodes)
    path = tmp_path / "model.onnx"
    onnx.save(m, path)
    f = checks.graph(m, [path], modules=2)
    assert f.status is Status.PASSED and f.figures["nodes"] == 47
    assert f.warnings and "decomposed" in f.warnings[0]
    assert not checks.graph(m, [path], modules=10).warnings
    assert checks.histogram(m) == {"Relu": 46, "Identity": 1}


def test_a_failure_inside_a_standard_ops_function_body_is_onnxs_and_a_warning(tmp_path: Path) -> None:
    """onnx's shape inference of MeanVarianceNormalization (opset 13) fails inside the op's own function
    body (ONNX's backend test test_mvn, which onnxruntime passes): the model is not what is wrong."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 3, 3, 1])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 3, 3, 1])
    graph = helper.make_graph([helper.make_node("MeanVarianceNormalization", ["x"], ["y"])], "g", [x], [y])
    path = tmp_path / "mvn.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    with pytest.raises(Exception, match="op_type:Constant"):  # what the check meets, unchanged
        onnx.checker.check_model(str(path), full_check=True)
    f = checks.checker(path)
    assert f.status is Status.PASSED, f.message
    assert len(f.warnings) == 1 and "MeanVarianceNormalization" in f.warnings[0]
    assert "function body" in f.warnings[0]


def test_a_shape_error_of_the_model_itself_still_fails(tmp_path: Path) -> None:
    """The same nesting outside a standard function body (the model's own inconsistent shapes) is the
    model's fault: declared [2] against an inferred [3]."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    path = tmp_path / "shapes.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    f = checks.checker(path)
    assert f.status is Status.FAILED and not f.warnings, f.message


def test_checker_runs_full_check_on_the_file(tmp_path: Path) -> None:
    good = tmp_path / "good.onnx"
    onnx.save(_model([helper.make_node("Relu", ["x"], ["y"])]), good)
    assert checks.checker(good).status is Status.PASSED
    bad = tmp_path / "bad.onnx"
    onnx.save(_model([helper.make_node("Relu", ["nowhere"], ["y"])]), bad)
    f = checks.checker(bad)
    assert f.status is Status.FAILED and "nowhere" in f.message


def _two_outputs(names: tuple[str, str]) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["batch", 4]) for n in names]
    nodes = [helper.make_node("Relu", ["x"], [names[0]]), helper.make_node("Neg", ["x"], [names[1]])]
    return helper.make_model(helper.make_graph(nodes, "g", [x], outs))


def test_a_declaration_that_contradicts_the_models_own_output_names_fails_naming_both_orders() -> None:
    m = _two_outputs(("scores", "boxes"))  # the exporter names the graph's outputs as declared
    f = checks.outputs(m, ["scores", "boxes"], ["x"], structure=["boxes", "scores"])
    assert f.status is Status.FAILED
    assert "declares ['scores', 'boxes']" in f.message and "in the order ['boxes', 'scores']" in f.message
    assert "'scores' would hold what the model calls 'boxes'" in f.message
    assert f.figures["returned"] == ["boxes", "scores"]
    ok = checks.outputs(m, ["scores", "boxes"], ["x"], structure=["scores", "boxes"])
    assert ok.status is Status.PASSED and not ok.warnings


def test_a_plain_tuple_is_matched_by_position_and_other_names_are_a_warning() -> None:
    m = _two_outputs(("scores", "boxes"))
    assert checks.outputs(m, ["scores", "boxes"], ["x"], structure=[None, None]).status is Status.PASSED
    f = checks.outputs(m, ["scores", "boxes"], ["x"], structure=["out", "aux"])
    assert f.status is Status.PASSED
    assert "names its outputs ['out', 'aux']" in f.warnings[0] and "by position" in f.warnings[0]


def test_a_node_that_draws_random_numbers_fails_train_mode() -> None:
    m = _model(
        [
            helper.make_node("RandomNormalLike", ["x"], ["noise"], name="noise"),
            helper.make_node("Add", ["x", "noise"], ["y"]),
        ]
    )
    f = checks.train_mode(m)
    assert f.status is Status.FAILED
    assert "RandomNormalLike 'noise' (draws random numbers)" in f.message and "randn_like" in f.message
