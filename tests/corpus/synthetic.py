"""Small ONNX test cases in the backend test layout, built with onnx.helper (no download).

One case per element type and value kind, plus one for each way the ONNX-only gate used to go
wrong (0-d values, no inputs, an empty first dimension, inputs whose first dims differ, a fixed or
a dynamic batch axis, infinities in the data, a model with only the ai.onnx.ml domain). Each case's
expected outputs are written by hand (the models are identities or have an obvious answer).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper, numpy_helper

ML = helper.make_opsetid("ai.onnx.ml", 3)


def _proto(value: Any, tp: Any, name: str) -> bytes:
    which = tp.WhichOneof("value")
    if which == "sequence_type":
        elem = tp.sequence_type.elem_type
        if elem.HasField("map_type"):
            maps = [_map(v, elem.map_type.key_type) for v in value]
            return helper.make_sequence(name, 4, maps).SerializeToString()
        return helper.make_sequence(name, 1, [numpy_helper.from_array(v) for v in value]).SerializeToString()
    if which == "optional_type":
        inner = None if value is None else numpy_helper.from_array(value)
        return helper.make_optional(name, 1 if value is not None else 0, inner).SerializeToString()
    if which == "map_type":
        return _map(value, tp.map_type.key_type, name).SerializeToString()
    if isinstance(value, onnx.TensorProto):
        value.name = name
        return value.SerializeToString()
    return numpy_helper.from_array(np.asarray(value), name).SerializeToString()


def _map(value: dict[Any, Any], key_type: int, name: str = "") -> Any:
    keys = [k.encode() if isinstance(k, str) else k for k in value]
    vals = [numpy_helper.from_array(np.asarray(v)) for v in value.values()]
    return helper.make_map(name, key_type, keys, helper.make_sequence("", 1, vals))


def write(
    root: Path,
    name: str,
    nodes: list[Any],
    inputs: list[Any],
    outputs: list[Any],
    feeds: list[Any],
    expected: list[Any],
    opsets: list[Any] | None = None,
    ir_version: int = 10,
) -> Path:
    case = root / name
    data = case / "test_data_set_0"
    data.mkdir(parents=True)
    graph = helper.make_graph(nodes, name, inputs, outputs)
    model = helper.make_model(graph, opset_imports=opsets or [helper.make_opsetid("", 21)])
    model.ir_version = ir_version
    (case / "model.onnx").write_bytes(model.SerializeToString())
    for kind, vis, vals in (("input", inputs, feeds), ("output", outputs, expected)):
        for i, (vi, v) in enumerate(zip(vis, vals, strict=True)):
            (data / f"{kind}_{i}.pb").write_bytes(_proto(v, vi.type, vi.name))
    return case


def _roundtrip(code: int, values: np.ndarray) -> np.ndarray:
    return numpy_helper.to_array(
        numpy_helper.from_array(values.astype(helper.tensor_dtype_to_np_dtype(code)))
    )


def _through_float(root: Path, name: str, code: int, values: np.ndarray, opset: int) -> Path:
    """x: T → Cast(float) → Cast(T): the identity for every value T holds."""
    x = _roundtrip(code, values)
    nodes = [
        helper.make_node("Cast", ["x"], ["f"], to=T.FLOAT),
        helper.make_node("Cast", ["f"], ["y"], to=code),
    ]
    shape = list(x.shape)
    return write(
        root, name, nodes,
        [helper.make_tensor_value_info("x", code, shape)], [helper.make_tensor_value_info("y", code, shape)],
        [x], [x], [helper.make_opsetid("", opset)],
    )  # fmt: skip


def _identity(root: Path, name: str, tp_in: Any, tp_out: Any, value: Any, opset: int = 21) -> Path:
    return write(root, name, [helper.make_node("Identity", ["x"], ["y"])], [tp_in], [tp_out], [value], [value],
                 [helper.make_opsetid("", opset)])  # fmt: skip


FLOATS = np.array([[0.5, -1.0, 2.0], [0.0, 1.5, -0.5]], dtype=np.float32)
INTS = np.array([[-2, 1, 0], [1, -1, 0]])
SIMPLE: dict[str, tuple[int, np.ndarray, int]] = {
    "float16": (T.FLOAT16, FLOATS, 21),
    "bfloat16": (T.BFLOAT16, FLOATS, 21),
    "float8e4m3fn": (T.FLOAT8E4M3FN, FLOATS, 21),
    "float8e4m3fnuz": (T.FLOAT8E4M3FNUZ, FLOATS, 21),
    "float8e5m2": (T.FLOAT8E5M2, FLOATS, 21),
    "float8e5m2fnuz": (T.FLOAT8E5M2FNUZ, FLOATS, 21),
    "int4": (T.INT4, INTS, 21),
    "uint4": (T.UINT4, np.abs(INTS), 21),
    "int2": (T.INT2, INTS, 25),
    "uint2": (T.UINT2, np.abs(INTS), 25),
    "float4e2m1": (T.FLOAT4E2M1, FLOATS, 23),  # onnxruntime 1.32 has no CPU kernel: an expected skip
}


def _vi(name: str, code: int, shape: list[Any]) -> Any:
    return helper.make_tensor_value_info(name, code, shape)


def build(root: Path) -> dict[str, Path]:
    """Every synthetic case, by name."""
    cases: dict[str, Path] = {}
    for name, (code, values, opset) in SIMPLE.items():
        cases[f"type_{name}"] = _through_float(root, f"type_{name}", code, values, opset)
    strings = np.array([["a", "bé"], ["", "z"]], dtype=object)
    cases["type_string"] = _identity(
        root, "type_string", _vi("x", T.STRING, [2, 2]), _vi("y", T.STRING, [2, 2]), strings
    )
    cases["type_bool"] = _identity(
        root, "type_bool", _vi("x", T.BOOL, [3]), _vi("y", T.BOOL, [3]), np.array([True, False, True])
    )
    c64 = np.array([1 + 2j, -1j], dtype=np.complex64)
    cases["type_complex64"] = _identity(
        root, "type_complex64", _vi("x", T.COMPLEX64, [2]), _vi("y", T.COMPLEX64, [2]), c64
    )
    seq = helper.make_tensor_sequence_value_info
    cases["kind_sequence"] = _identity(root, "kind_sequence", seq("x", T.FLOAT, None), seq("y", T.FLOAT, None),
                                       [FLOATS, FLOATS[:1]])  # fmt: skip
    opt = helper.make_tensor_type_proto(T.FLOAT, [2, 3])
    cases["kind_optional"] = _identity(
        root, "kind_optional",
        helper.make_value_info("x", helper.make_optional_type_proto(opt)),
        helper.make_value_info("y", helper.make_optional_type_proto(opt)),
        FLOATS,
    )  # fmt: skip
    cases["kind_optional_empty"] = write(
        root, "kind_optional_empty",
        [helper.make_node("Optional", [], ["y"], type=opt)],
        [], [helper.make_value_info("y", helper.make_optional_type_proto(opt))], [], [None],
        [helper.make_opsetid("", 21)],
    )  # fmt: skip
    # A map in (DictVectorizer), a sequence of maps out (ZipMap): only the ai.onnx.ml domain.
    map_in = helper.make_value_info(
        "x", helper.make_map_type_proto(T.STRING, helper.make_tensor_type_proto(T.FLOAT, []))
    )
    cases["kind_map_ml_only"] = write(
        root, "kind_map_ml_only",
        [helper.make_node("DictVectorizer", ["x"], ["y"], domain="ai.onnx.ml", string_vocabulary=["a", "b", "c"])],
        [map_in], [_vi("y", T.FLOAT, [1, 3])],
        [{"a": np.float32(1.0), "c": np.float32(3.0)}], [np.array([[1.0, 0.0, 3.0]], dtype=np.float32)],
        [ML], ir_version=8,
    )  # fmt: skip
    seq_map = helper.make_sequence_type_proto(
        helper.make_map_type_proto(T.STRING, helper.make_tensor_type_proto(T.FLOAT, []))
    )
    zipped = [{"a": np.float32(0.25), "b": np.float32(0.75)}]
    cases["kind_map_out"] = write(
        root, "kind_map_out",
        [helper.make_node("ZipMap", ["x"], ["y"], domain="ai.onnx.ml", classlabels_strings=["a", "b"])],
        [_vi("x", T.FLOAT, [1, 2])], [helper.make_value_info("y", seq_map)],
        [np.array([[0.25, 0.75]], dtype=np.float32)], [zipped],
        [helper.make_opsetid("", 21), ML], ir_version=8,
    )  # fmt: skip
    scalar = np.array(2.5, dtype=np.float32)
    cases["zero_d"] = _identity(root, "zero_d", _vi("x", T.FLOAT, []), _vi("y", T.FLOAT, []), scalar)
    const = numpy_helper.from_array(FLOATS, "c")
    cases["no_inputs"] = write(root, "no_inputs", [helper.make_node("Constant", [], ["y"], value=const)], [],
                               [_vi("y", T.FLOAT, [2, 3])], [], [FLOATS])  # fmt: skip
    empty = np.zeros((0, 3), dtype=np.float32)
    cases["empty_first_dim"] = _identity(
        root, "empty_first_dim", _vi("x", T.FLOAT, ["N", 3]), _vi("y", T.FLOAT, ["N", 3]), empty
    )
    special = np.array([np.inf, -np.inf, np.nan, 1.0], dtype=np.float32)
    cases["infinities"] = _identity(
        root, "infinities", _vi("x", T.FLOAT, [4]), _vi("y", T.FLOAT, [4]), special
    )
    a, b = FLOATS, np.ones((3, 4), dtype=np.float32)
    cases["first_dims_differ"] = write(
        root, "first_dims_differ", [helper.make_node("MatMul", ["a", "b"], ["y"])],
        [_vi("a", T.FLOAT, ["M", 3]), _vi("b", T.FLOAT, ["K", 4])], [_vi("y", T.FLOAT, ["M", 4])],
        [a, b], [a @ b],
    )  # fmt: skip
    cases["fixed_batch"] = _identity(
        root, "fixed_batch", _vi("x", T.FLOAT, [2, 3]), _vi("y", T.FLOAT, [2, 3]), FLOATS
    )
    cases["dynamic_batch"] = _identity(
        root, "dynamic_batch", _vi("x", T.FLOAT, ["N", 3]), _vi("y", T.FLOAT, ["N", 3]), FLOATS
    )
    wrong = write(root, "wrong_output", [helper.make_node("Identity", ["x"], ["y"])],
                  [_vi("x", T.FLOAT, [2, 3])], [_vi("y", T.FLOAT, [2, 3])], [FLOATS], [FLOATS + 1])  # fmt: skip
    cases["wrong_output"] = wrong
    return cases


Builder = Callable[[Path], dict[str, Path]]
