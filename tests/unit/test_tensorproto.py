"""The pure-Python TensorProto reader/writer agrees with onnx.numpy_helper, both ways."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from ci_onnx import tensorproto

DTYPES = ["float32", "float16", "float64", "int64", "int32", "int8", "uint8", "bool"]


def _sample(dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    rng = np.random.default_rng(0)
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if dtype.startswith("float"):
        a = rng.standard_normal(shape).astype(dtype)
        if a.size >= 3:
            a.flat[0], a.flat[1], a.flat[2] = np.nan, np.inf, -np.inf
        return a
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (5,), (2, 3, 4)])
def test_reads_what_numpy_helper_writes(dtype: str, shape: tuple[int, ...]) -> None:
    a = _sample(dtype, shape)
    data = numpy_helper.from_array(a, name="x").SerializeToString()
    name, b = tensorproto.loads(data)
    assert name == "x"
    assert b.dtype == a.dtype and b.shape == a.shape
    np.testing.assert_array_equal(b, a)


@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_helper_reads_what_we_write(dtype: str) -> None:
    a = _sample(dtype, (3, 2))
    t = TensorProto()
    t.ParseFromString(tensorproto.dumps(a, "logits"))
    assert t.name == "logits"
    b = numpy_helper.to_array(t)
    assert b.dtype == a.dtype
    np.testing.assert_array_equal(b, a)


@pytest.mark.parametrize(
    ("dtype", "onnx_type", "values"),
    [
        ("float32", TensorProto.FLOAT, [1.5, -2.0, float("nan")]),
        ("float64", TensorProto.DOUBLE, [1e300, -0.5, 3.0]),
        ("int64", TensorProto.INT64, [-(2**62), 0, 2**62]),
        ("int32", TensorProto.INT32, [-(2**31), 7, 2**31 - 1]),
        ("int8", TensorProto.INT8, [-128, 0, 127]),
        ("uint8", TensorProto.UINT8, [0, 128, 255]),
        ("bool", TensorProto.BOOL, [True, False, True]),
    ],
)
def test_reads_typed_fields(dtype: str, onnx_type: int, values: list[float]) -> None:
    t = helper.make_tensor("v", onnx_type, [3], values, raw=False)
    assert not t.raw_data
    _, got = tensorproto.loads(t.SerializeToString())
    np.testing.assert_array_equal(got, numpy_helper.to_array(t))
    assert got.dtype == np.dtype(dtype)


def test_reads_float16_from_int32_data() -> None:
    a = np.array([1.0, -2.5, 65504.0], dtype=np.float16)
    t = helper.make_tensor("h", TensorProto.FLOAT16, [3], a, raw=False)
    assert not t.raw_data
    _, got = tensorproto.loads(t.SerializeToString())
    np.testing.assert_array_equal(got, a)


def test_rejects_unsupported_and_broken_input(tmp_path) -> None:  # type: ignore[no-untyped-def]
    s = helper.make_tensor("s", TensorProto.STRING, [1], [b"x"])
    with pytest.raises(tensorproto.TensorProtoError, match="string"):
        tensorproto.loads(s.SerializeToString())
    good = tensorproto.dumps(np.arange(6, dtype=np.float32))
    with pytest.raises(tensorproto.TensorProtoError):
        tensorproto.loads(good[:-3])
    path = tmp_path / "x.pb"
    path.write_bytes(good[:-3])
    with pytest.raises(tensorproto.TensorProtoError, match=r"x\.pb"):
        tensorproto.load(path)
    with pytest.raises(tensorproto.TensorProtoError, match="complex"):
        tensorproto.dumps(np.zeros(2, dtype=np.complex64))
