"""The pure-Python TensorProto reader/writer agrees with onnx.numpy_helper, both ways."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from ci_onnx.contracts import tensorproto

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


def test_rejects_broken_input(tmp_path) -> None:  # type: ignore[no-untyped-def]
    good = tensorproto.dumps(np.arange(6, dtype=np.float32))
    with pytest.raises(tensorproto.TensorProtoError):
        tensorproto.loads(good[:-3])
    path = tmp_path / "x.pb"
    path.write_bytes(good[:-3])
    with pytest.raises(tensorproto.TensorProtoError, match=r"x\.pb"):
        tensorproto.load(path)
    with pytest.raises(tensorproto.TensorProtoError, match="varint"):
        tensorproto.loads(b"\x08" + b"\xff" * 9 + b"\x7f")  # a dim of 2^70
    neg = helper.make_tensor("n", TensorProto.FLOAT, [1], [1.0])
    neg.dims[0] = -1
    with pytest.raises(tensorproto.TensorProtoError, match="negative"):
        tensorproto.loads(neg.SerializeToString())
    lying = TensorProto(dims=[1 << 40, 1 << 40], data_type=TensorProto.FLOAT, raw_data=b"")
    with pytest.raises(tensorproto.TensorProtoError, match="claims"):
        tensorproto.loads(lying.SerializeToString())


# Every ONNX element type, as onnx writes it, read back and written again so onnx reads the same values.
ELEMENT_TYPES = [
    (TensorProto.STRING, np.array([["a", "bé"], ["", "z"]], dtype=object)),
    (TensorProto.COMPLEX64, np.array([1 + 2j, -3j], dtype=np.complex64)),
    (TensorProto.COMPLEX128, np.array([[1 - 1j]], dtype=np.complex128)),
    (TensorProto.BOOL, np.array([True, False, True])),
    (TensorProto.FLOAT16, np.array([0.5, -2.0], dtype=np.float16)),
    *(
        (code, np.array([[0.5, -1.0, 2.0], [0.0, 1.5, -0.5]], dtype=np.float32))
        for code in (
            TensorProto.BFLOAT16,
            TensorProto.FLOAT8E4M3FN,
            TensorProto.FLOAT8E4M3FNUZ,
            TensorProto.FLOAT8E5M2,
            TensorProto.FLOAT8E5M2FNUZ,
            TensorProto.FLOAT4E2M1,
        )
    ),
    (TensorProto.INT4, np.array([[-8, 7, 0], [1, -1, 3]])),
    (TensorProto.UINT4, np.array([0, 15, 7, 1, 2])),
    (TensorProto.INT2, np.array([-2, 1, 0, -1, 1])),
    (TensorProto.UINT2, np.array([[3, 0, 1]])),
]


@pytest.mark.parametrize(("code", "values"), ELEMENT_TYPES, ids=lambda x: str(x)[:12])
def test_every_element_type_round_trips_with_onnx(code: int, values: np.ndarray) -> None:
    from onnx import numpy_helper

    expected = numpy_helper.to_array(
        numpy_helper.from_array(values.astype(helper.tensor_dtype_to_np_dtype(code)))
    )
    written = numpy_helper.from_array(expected, "t")
    t = tensorproto.loads_tensor(written.SerializeToString())
    assert (t.name, t.data_type, t.array.shape) == ("t", code, expected.shape)
    back = TensorProto()
    back.ParseFromString(tensorproto.dumps(t.array, "t", t.data_type))
    again = numpy_helper.to_array(back)
    assert again.dtype == expected.dtype and again.shape == expected.shape
    if expected.dtype == object:
        assert again.tolist() == expected.tolist()
    else:
        np.testing.assert_array_equal(again.astype(np.complex128), expected.astype(np.complex128))


def test_zero_d_and_empty_tensors_keep_their_shape() -> None:
    for arr in (np.array(3.5, dtype=np.float32), np.zeros((0, 3), dtype=np.int64)):
        _, got = tensorproto.loads(tensorproto.dumps(arr))
        assert got.shape == arr.shape


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=64))
def test_any_bytes_raise_only_the_documented_error(data: bytes) -> None:
    with contextlib.suppress(tensorproto.TensorProtoError):
        tensorproto.loads_tensor(data)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=48), st.integers(0, 60))
def test_mutated_tensors_raise_only_the_documented_error(tail: bytes, cut: int) -> None:
    good = tensorproto.dumps(np.arange(6, dtype=np.float32).reshape(2, 3), "x")
    for data in (good[:cut] + tail, tail + good[cut:], good[:cut]):
        with contextlib.suppress(tensorproto.TensorProtoError):
            tensorproto.loads_tensor(data)
