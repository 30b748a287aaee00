"""Values of every ONNX kind between files, the runner and the judge; batch axes; type skips."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from ci_onnx import matrix
from ci_onnx.contracts.bundle import Manifest, TensorSpec, Tolerance
from ci_onnx.observer import feeds, values
from ci_onnx.verify import compare, decode

TOL = Tolerance(atol=1e-7, rtol=1e-3)
FLOATS = np.arange(6, dtype=np.float32).reshape(2, 3)


def _write(tmp_path: Path, proto: object) -> Path:
    path = tmp_path / "v.pb"
    path.write_bytes(proto.SerializeToString())  # type: ignore[attr-defined]
    return path


@pytest.mark.parametrize(
    ("type_str", "proto", "expected"),
    [
        ("seq(tensor(float))", helper.make_sequence("s", 1, [numpy_helper.from_array(FLOATS)]), [FLOATS]),
        ("optional(tensor(float))", helper.make_optional("o", 1, numpy_helper.from_array(FLOATS)), FLOATS),
        ("optional(tensor(float))", helper.make_optional("o", 0, None), None),
        (
            "map(int64,tensor(float))",
            helper.make_map(
                "m", TensorProto.INT64, [3, -1],
                helper.make_sequence("", 1, [numpy_helper.from_array(np.float32(v)) for v in (0.5, 2.0)]),
            ),
            {3: np.float32(0.5), -1: np.float32(2.0)},
        ),
    ],
)  # fmt: skip
def test_non_tensor_values_round_trip_through_the_runner_codec(
    tmp_path: Path, type_str: str, proto: object, expected: object
) -> None:
    value = values.loads(_write(tmp_path, proto).read_bytes(), type_str)
    back = tmp_path / "back.pb"
    back.write_bytes(values.dumps(value, type_str, "v"))
    again = decode.load(back, type_str)  # read as onnx reads it
    assert compare.values("v", again, expected, TOL).passed
    assert compare.values("v", decode.load(_write(tmp_path, proto), type_str), again, TOL).passed


def test_the_judge_compares_like_onnx_s_backend_runner() -> None:
    assert compare.values("y", FLOATS, FLOATS * (1 + 5e-4), TOL).passed
    assert not compare.values("y", FLOATS + 1e-3, FLOATS, TOL).passed
    assert "dtype" in compare.values("y", FLOATS.astype(np.float64), FLOATS, TOL).shape_mismatch
    assert "shape" in compare.values("y", np.float32(1), np.ones(1, np.float32), TOL).shape_mismatch
    strings = np.array(["a", "b"], dtype=object)
    assert compare.values("y", strings, strings.copy(), TOL).passed
    assert not compare.values("y", np.array(["a", "c"], dtype=object), strings, TOL).passed
    special = np.array([np.inf, -np.inf, np.nan], np.float32)
    assert compare.values("y", special, special.copy(), TOL).passed
    assert not compare.values("y", special[[1, 0, 2]], special, TOL).passed
    assert compare.values("y", None, None, TOL).passed
    assert not compare.values("y", None, FLOATS, TOL).passed
    assert not compare.values("y", [FLOATS], [FLOATS, FLOATS], TOL).passed
    assert not compare.values("y", {"a": FLOATS}, {"b": FLOATS}, TOL).passed
    c = np.array([1 + 1j], np.complex64)
    assert compare.values("y", c, c.copy(), TOL).passed and not compare.values("y", c + 1j, c, TOL).passed


def test_narrow_types_compare_by_decoded_value() -> None:
    e5m2 = numpy_helper.to_array(numpy_helper.from_array(FLOATS.astype(helper.tensor_dtype_to_np_dtype(19))))
    assert compare.values("y", e5m2, e5m2.copy(), TOL).passed
    bigger = numpy_helper.to_array(
        numpy_helper.from_array((FLOATS * 4).astype(helper.tensor_dtype_to_np_dtype(19)))
    )
    p = compare.values("y", bigger, e5m2, TOL)
    assert not p.passed and p.max_abs == pytest.approx(15.0)  # 20 − 5, decoded, not bits
    bf16 = numpy_helper.to_array(
        numpy_helper.from_array(np.float32([1.0]).astype(helper.tensor_dtype_to_np_dtype(16)))
    )
    one_ulp = numpy_helper.to_array(
        numpy_helper.from_array(np.float32([1.0078125]).astype(helper.tensor_dtype_to_np_dtype(16)))
    )
    assert compare.values("y", one_ulp, bf16, TOL).passed  # bfloat16: two ULPs of rtol, as onnx allows


def _manifest(
    inputs: tuple[TensorSpec, ...],
    dynamic: dict[str, dict[str, str]] | None = None,
    outputs: tuple[TensorSpec, ...] = (),
) -> Manifest:
    return Manifest(
        1,
        "m",
        "onnx",
        17,
        17,
        8,
        "fp32",
        {},
        inputs,
        outputs,
        dynamic or {},
        TOL,
        {},
        None,
        (1, 2),
        (),
        (),
        0,
        {},
        {},
    )


def test_batch_checks_need_one_dynamic_or_declared_batch_axis() -> None:
    x, n = TensorSpec("x", ("N", 3), "float32"), TensorSpec("m", ("N", 1), "float32")
    assert feeds.batch_axis_problem(_manifest((x, n))) == ""
    fixed = TensorSpec("x", (3, 3), "float32")
    assert "fixed at 3" in feeds.batch_axis_problem(_manifest((fixed,)))
    assert feeds.batch_axis_problem(_manifest((fixed,), {"x": {"0": "batch"}})) == ""
    assert "different dims" in feeds.batch_axis_problem(_manifest((x, TensorSpec("w", ("K", 4), "float32"))))
    assert "0-d" in feeds.batch_axis_problem(_manifest((TensorSpec("s", (), "float32"),)))
    assert "no inputs" in feeds.batch_axis_problem(_manifest(()))
    assert "seq" in feeds.batch_axis_problem(_manifest((TensorSpec("q", (), "seq(tensor(float))"),)))


def test_only_outputs_on_the_batch_axis_are_compared_across_batch_sizes() -> None:
    x = TensorSpec("x", ("batch", 6), "float32")
    rows = TensorSpec("z", ("batch", 6), "float32")
    loss = TensorSpec("energy", (), "float32")  # a mean over the whole batch
    stats = TensorSpec("hist", (10,), "float32")
    declared = TensorSpec("tags", (4, 5), "float32")
    m = _manifest((x,), {"x": {"0": "batch"}, "tags": {"0": "batch"}}, (rows, loss, stats, declared))
    assert feeds.batched_outputs(m) == ("z", "tags")
    assert feeds.batched_outputs(_manifest((x,), None, (loss,))) == ()


def test_a_type_a_release_cannot_express_names_the_type_and_release() -> None:
    caps = matrix.caps_for("1.32.0")
    assert caps.cannot_hold(["float", "int4"]) == ""
    why = caps.cannot_hold(values.element_names("seq(tensor(float4e2m1))"))
    assert "float4e2m1" in why and "1.32" in why
    assert values.element_names("map(int64,tensor(float))") == ["int64", "float"]
    assert values.element_names("float32") == ["float"] and values.element_names("float8_e4m3fn") == [
        "float8e4m3fn"
    ]


def test_figures_stay_finite() -> None:
    p = compare.values("y", np.float32([np.inf]), np.float32([1.0]), TOL)
    assert p.out_of_tolerance == 1 and math.isfinite(p.max_abs)


def test_an_output_whose_axis_0_is_another_dynamic_dim_is_not_batched() -> None:
    x = TensorSpec("x", ("batch", 6), "float32")
    rows = TensorSpec("z", ("batch", 6), "float32")
    picked = TensorSpec("selected", ("batch",), "float32")  # the file's name, from the example
    m = _manifest((x,), {"x": {"0": "batch"}, "selected": {"0": "n_selected"}}, (rows, picked))
    assert feeds.batched_outputs(m) == ("z",)
    unnamed = TensorSpec("kept", ("u0",), "float32")  # dynamo's name for a data-dependent size
    assert feeds.batched_outputs(_manifest((x,), {"x": {"0": "batch"}}, (rows, unnamed))) == ("z",)
