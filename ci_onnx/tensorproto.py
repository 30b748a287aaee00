"""Read and write ONNX TensorProto files with numpy alone (no onnx, no protobuf).

A bundle's ``.pb`` files are TensorProto messages (written by onnx.numpy_helper.from_array, with
``raw_data``). Runners execute in environments that hold only numpy and one onnxruntime, so they read
and write those files with this module: the protobuf wire format of the few fields a tensor needs.

Read: dims, data_type, name, raw_data, and the typed fields (float_data, int32_data, int64_data,
double_data, uint64_data) that other writers use. Write: dims, data_type, name, raw_data.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

# TensorProto.DataType → numpy dtype, for the dtypes onnx-gate handles.
_DTYPES: dict[int, np.dtype] = {
    1: np.dtype("<f4"),
    2: np.dtype("u1"),
    3: np.dtype("i1"),
    4: np.dtype("<u2"),
    5: np.dtype("<i2"),
    6: np.dtype("<i4"),
    7: np.dtype("<i8"),
    9: np.dtype("?"),
    10: np.dtype("<f2"),
    11: np.dtype("<f8"),
    12: np.dtype("<u4"),
    13: np.dtype("<u8"),
}

# Field numbers of TensorProto.
_DIMS, _DATA_TYPE, _FLOAT, _INT32, _STRING, _INT64, _NAME = 1, 2, 4, 5, 6, 7, 8
_RAW, _DOUBLE, _UINT64, _EXTERNAL = 9, 10, 11, 13
_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5


class TensorProtoError(ValueError):
    """The bytes are not a TensorProto this module can read."""


def data_type_of(dtype: np.dtype) -> int:
    dt = np.dtype(dtype)
    key = dt.newbyteorder("<") if dt.byteorder == ">" else dt
    for code, known in _DTYPES.items():
        if known == key:
            return code
    raise TensorProtoError(f"dtype {dt} has no TensorProto data type here")


def dumps(array: np.ndarray, name: str = "") -> bytes:
    """A TensorProto with ``raw_data``, as onnx.numpy_helper.from_array writes it."""
    arr = np.asarray(array)
    code = data_type_of(arr.dtype)
    out = bytearray()
    for d in arr.shape:
        out += _key(_DIMS, _VARINT) + _varint(int(d))
    out += _key(_DATA_TYPE, _VARINT) + _varint(code)
    if name:
        encoded = name.encode()
        out += _key(_NAME, _LEN) + _varint(len(encoded)) + encoded
    raw = np.ascontiguousarray(arr, dtype=_DTYPES[code]).tobytes()
    out += _key(_RAW, _LEN) + _varint(len(raw)) + raw
    return bytes(out)


def loads(data: bytes) -> tuple[str, np.ndarray]:
    """The tensor's name and value."""
    dims: list[int] = []
    code = 0
    name = ""
    raw: bytes | None = None
    typed: dict[int, list[bytes | int]] = {}
    pos = 0
    n = len(data)
    while pos < n:
        key, pos = _read_varint(data, pos)
        field, wire = key >> 3, key & 7
        if wire == _VARINT:
            value, pos = _read_varint(data, pos)
            if field == _DIMS:
                dims.append(_signed64(value))
            elif field == _DATA_TYPE:
                code = value
            elif field in (_INT32, _INT64, _UINT64):
                typed.setdefault(field, []).append(value)
        elif wire == _LEN:
            length, pos = _read_varint(data, pos)
            chunk = data[pos : pos + length]
            if len(chunk) != length:
                raise TensorProtoError("truncated TensorProto")
            pos += length
            if field == _DIMS:
                dims.extend(_signed64(v) for v in _varints(chunk))
            elif field == _NAME:
                name = chunk.decode("utf-8", "replace")
            elif field == _RAW:
                raw = chunk
            elif field in (_FLOAT, _DOUBLE, _INT32, _INT64, _UINT64):
                typed.setdefault(field, []).append(chunk)
            elif field == _STRING:
                raise TensorProtoError("string tensors are not supported")
            elif field == _EXTERNAL:
                raise TensorProtoError("tensors with external data are not supported")
        elif wire == _I64:
            chunk = data[pos : pos + 8]
            pos += 8
            if field == _DOUBLE:
                typed.setdefault(field, []).append(chunk)
        elif wire == _I32:
            chunk = data[pos : pos + 4]
            pos += 4
            if field == _FLOAT:
                typed.setdefault(field, []).append(chunk)
        else:
            raise TensorProtoError(f"unsupported wire type {wire} (field {field})")
    if code not in _DTYPES:
        raise TensorProtoError(f"TensorProto data type {code} is not supported")
    dtype = _DTYPES[code]
    shape = tuple(dims)
    values = np.frombuffer(raw, dtype=dtype).copy() if raw is not None else _typed_values(code, typed)
    count = int(np.prod(shape, dtype=np.int64))
    if values.size != count:
        raise TensorProtoError(f"{name or 'tensor'}: {values.size} values for shape {shape}")
    return name, values.reshape(shape)


def save(path: Path, array: np.ndarray, name: str = "") -> None:
    path.write_bytes(dumps(array, name))


def load(path: Path) -> tuple[str, np.ndarray]:
    try:
        return loads(path.read_bytes())
    except TensorProtoError as exc:
        raise TensorProtoError(f"{path}: {exc}") from None


def _typed_values(code: int, typed: dict[int, list[bytes | int]]) -> np.ndarray:
    dtype = _DTYPES[code]
    if code == 1:
        return np.frombuffer(b"".join(_as_bytes(typed.get(_FLOAT, []))), dtype="<f4").astype(dtype)
    if code == 11:
        return np.frombuffer(b"".join(_as_bytes(typed.get(_DOUBLE, []))), dtype="<f8").astype(dtype)
    if code in (7,):
        return np.array([_signed64(v) for v in _ints(typed.get(_INT64, []))], dtype=np.int64)
    if code in (12, 13):
        return np.array(list(_ints(typed.get(_UINT64, []))), dtype=np.uint64).astype(dtype)
    # int32_data carries int32, int16, int8, uint16, uint8, bool, and float16 as its bit pattern.
    ints = np.array([_signed64(v) for v in _ints(typed.get(_INT32, []))], dtype=np.int64)
    if code == 10:
        return ints.astype(np.uint16).view(np.float16)
    return ints.astype(dtype)


def _as_bytes(items: list[bytes | int]) -> list[bytes]:
    return [i for i in items if isinstance(i, bytes)]


def _ints(items: list[bytes | int]) -> list[int]:
    out: list[int] = []
    for item in items:
        if isinstance(item, bytes):
            out.extend(_varints(item))
        else:
            out.append(item)
    return out


def _key(field: int, wire: int) -> bytes:
    return _varint((field << 3) | wire)


def _varint(value: int) -> bytes:
    if value < 0:
        value += 1 << 64
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise TensorProtoError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise TensorProtoError("varint too long")


def _varints(chunk: bytes) -> list[int]:
    out = []
    pos = 0
    while pos < len(chunk):
        value, pos = _read_varint(chunk, pos)
        out.append(value)
    return out


def _signed64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


__all__ = ["TensorProtoError", "data_type_of", "dumps", "load", "loads", "save"]
