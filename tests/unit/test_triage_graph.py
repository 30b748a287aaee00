"""The graph as triage walks it: where each node came from, the exposed graph, module outputs."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper

from ci_onnx.triage import graph
from tests import bundles


def test_dynamo_metadata_and_torchscript_names_give_the_module_and_the_source_line() -> None:
    meta = {
        "pkg.torch.onnx.name_scopes": "['', 'model', 'model.features', 'model.features.2', 'relu']",
        "pkg.torch.onnx.stack_trace": (
            'File "/x/ci_onnx/export/torch_export.py", line 55, in forward\n'
            '  File "/repo/models/net.py", line 38, in forward\n'
            '  File "/venv/lib/python3.11/site-packages/torch/nn/modules/container.py", line 253, in forward'
        ),
    }
    assert graph._origin("node_relu", meta) == ("features.2", "net.py:38")
    assert graph._origin("/model/encoder/encoder.layer.0/Add_1", {}) == ("encoder.layer.0", "")
    assert graph._origin("/model/Gemm", {}) == ("", "")


def test_the_exposed_graph_returns_every_intermediate_and_the_runtime_runs_it() -> None:
    model = bundles.mlp()
    exposed = graph.expose(model)
    names = [o.name for o in exposed.graph.output]
    made = [o for n in model.graph.node for o in n.output]
    assert names[0] == model.graph.output[0].name and set(made) <= set(names)
    sess = ort.InferenceSession(exposed.SerializeToString(), providers=["CPUExecutionProvider"])
    got = sess.run(None, {"x": np.ones((2, 8), np.float32)})
    assert len(got) == len(names)


def test_topological_order_holds_for_a_graph_stored_out_of_order() -> None:
    nodes = [
        helper.make_node("Relu", ["a"], ["b"], name="second"),
        helper.make_node("Neg", ["x"], ["a"], name="first"),
    ]
    g = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("b", onnx.TensorProto.FLOAT, [1])],
    )  # fmt: skip
    assert [n.name for n in graph.of(helper.make_model(g)).nodes] == ["first", "second"]


def test_a_module_output_maps_to_the_value_that_leaves_its_nodes() -> None:
    g = graph.Graph(
        (
            graph.Node("m1", "MatMul", ("x", "w"), ("t",), module="inp"),
            graph.Node("a1", "Add", ("t", "b"), ("u",), module="inp"),
            graph.Node("r", "Relu", ("u",), ("v",), module="act"),
        ),
        ("x",), ("v",), frozenset({"w", "b"}),
    )  # fmt: skip
    arr = np.zeros((1, 4))
    found = graph.module_values(
        g, {"inp": arr, "act": arr, "gone": arr}, {"t": (1, 4), "u": (1, 4), "v": (1, 4)}
    )
    assert set(found) == {"u", "v"}
