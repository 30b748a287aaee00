"""Read and write ONNX TensorProto files with numpy alone (no onnx, no protobuf).

A bundle's ``.pb`` files are TensorProto messages (or SequenceProto / OptionalProto / MapProto for
non-tensor values). Runners execute in environments that hold only numpy and one onnxruntime, so they
read and write those files with this module: the protobuf wire format of the few fields a value needs.

Every ONNX element type is read. Where numpy has a dtype (float32 … bool, complex, strings as object
arrays of ``str``) the array has it. Where numpy has none (bfloat16, the float8 kinds, float4, int4,
uint4, int2, uint2) the array holds each element's *bits*, unpacked, one element per ``uint16``
(bfloat16) or ``uint8`` (the others), and :class:`Tensor` carries the data type that gives them a
meaning. The judge decodes those with onnx's numpy_helper; a runner hands them to onnxruntime as an
OrtValue of that type.

Any bytes that are not such a message raise :class:`TensorProtoError`, never anything else.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import numpy as np

FLOAT, UINT8, INT8, UINT16, INT16, INT32, INT64, STRING, BOOL = 1, 2, 3, 4, 5, 6, 7, 8, 9
FLOAT16, DOUBLE, UINT32, UINT64, COMPLEX64, COMPLEX128, BFLOAT16 = 10, 11, 12, 13, 14, 15, 16
FLOAT8E4M3FN, FLOAT8E4M3FNUZ, FLOAT8E5M2, FLOAT8E5M2FNUZ = 17, 18, 19, 20
UINT4, INT4, FLOAT4E2M1, FLOAT8E8M0, UINT2, INT2 = 21, 22, 23, 24, 25, 26

# Data types numpy has a dtype for.
NATIVE: dict[int, np.dtype] = {
    FLOAT: np.dtype("<f4"),
    UINT8: np.dtype("u1"),
    INT8: np.dtype("i1"),
    UINT16: np.dtype("<u2"),
    INT16: np.dtype("<i2"),
    INT32: np.dtype("<i4"),
    INT64: np.dtype("<i8"),
    BOOL: np.dtype("?"),
    FLOAT16: np.dtype("<f2"),
    DOUBLE: np.dtype("<f8"),
    UINT32: np.dtype("<u4"),
    UINT64: np.dtype("<u8"),
    COMPLEX64: np.dtype("<c8"),
    COMPLEX128: np.dtype("<c16"),
}
# Data types numpy has no dtype for: bits per element (the arrays hold them as uint16 / uint8).
BITS: dict[int, int] = {
    BFLOAT16: 16,
    FLOAT8E4M3FN: 8,
    FLOAT8E4M3FNUZ: 8,
    FLOAT8E5M2: 8,
    FLOAT8E5M2FNUZ: 8,
    FLOAT8E8M0: 8,
    UINT4: 4,
    INT4: 4,
    FLOAT4E2M1: 4,
    UINT2: 2,
    INT2: 2,
}
NAMES: dict[int, str] = {
    FLOAT: "float", UINT8: "uint8", INT8: "int8", UINT16: "uint16", INT16: "int16", INT32: "int32",
    INT64: "int64", STRING: "string", BOOL: "bool", FLOAT16: "float16", DOUBLE: "double",
    UINT32: "uint32", UINT64: "uint64", COMPLEX64: "complex64", COMPLEX128: "complex128",
    BFLOAT16: "bfloat16", FLOAT8E4M3FN: "float8e4m3fn", FLOAT8E4M3FNUZ: "float8e4m3fnuz",
    FLOAT8E5M2: "float8e5m2", FLOAT8E5M2FNUZ: "float8e5m2fnuz", UINT4: "uint4", INT4: "int4",
    FLOAT4E2M1: "float4e2m1", FLOAT8E8M0: "float8e8m0", UINT2: "uint2", INT2: "int2",
}  # fmt: skip
"""onnxruntime's names: ``tensor(<name>)`` is what NodeArg.type and OrtValue.data_type() say."""

# Field numbers of TensorProto.
_DIMS, _DATA_TYPE, _FLOAT, _INT32, _STRING, _INT64, _NAME = 1, 2, 4, 5, 6, 7, 8
_RAW, _DOUBLE, _UINT64, _EXTERNAL, _LOCATION = 9, 10, 11, 13, 14
_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5
_INTS = (_DIMS, _INT32, _INT64, _UINT64)
_WIRES: dict[int, tuple[int, ...]] = {
    **dict.fromkeys(_INTS, (_VARINT, _LEN)),
    _DATA_TYPE: (_VARINT,), _LOCATION: (_VARINT,), _FLOAT: (_I32, _LEN), _DOUBLE: (_I64, _LEN),
    **dict.fromkeys((_STRING, _NAME, _RAW, _EXTERNAL), (_LEN,)),
}  # fmt: skip
"""The wire types each field read may come in: a known field in another is no TensorProto."""
MAX_ELEMENTS = 1 << 34
"""More elements than any test file holds: a larger claimed shape is a lie, not a tensor."""


class TensorProtoError(ValueError):
    """The bytes are not a TensorProto (or value proto) this module can read."""


@dataclasses.dataclass(frozen=True)
class Tensor:
    name: str
    data_type: int
    array: np.ndarray
    """Native dtype where numpy has one, else the elements' bits (see the module docstring)."""


def data_type_of(dtype: np.dtype) -> int:
    dt = np.dtype(dtype)
    if dt.kind in "OUS":
        return STRING
    key = dt.newbyteorder("<") if dt.byteorder == ">" else dt
    for code, known in NATIVE.items():
        if known == key:
            return code
    raise TensorProtoError(f"dtype {dt} has no TensorProto data type here (pass data_type= with its bits)")


def storage_dtype(code: int) -> np.dtype:
    """The dtype of the arrays this module uses for data type ``code``."""
    if code in NATIVE:
        return NATIVE[code]
    if code == STRING:
        return np.dtype(object)
    if code in BITS:
        return np.dtype("<u2") if BITS[code] == 16 else np.dtype("u1")
    raise TensorProtoError(f"TensorProto data type {code} is not an ONNX element type")


def dumps(array: Any, name: str = "", data_type: int | None = None) -> bytes:
    """A TensorProto (``raw_data``, or ``string_data`` for strings), as numpy_helper.from_array writes it.

    ``data_type`` names the type of a bits array (bfloat16, float8, 4- and 2-bit types).
    """
    arr = np.asarray(array)
    code = data_type if data_type is not None else data_type_of(arr.dtype)
    out = bytearray()
    for d in arr.shape:
        out += field_key(_DIMS, _VARINT) + encode_varint(int(d))
    out += field_key(_DATA_TYPE, _VARINT) + encode_varint(code)
    if name:
        out += len_field(_NAME, name.encode())
    if code == STRING:
        for item in arr.reshape(-1):
            out += len_field(_STRING, item if isinstance(item, bytes) else str(item).encode())
        return bytes(out)
    flat = np.ascontiguousarray(arr, dtype=storage_dtype(code)).reshape(-1)
    bits = BITS.get(code, 8)
    raw = pack_bits(flat, bits) if bits < 8 else flat.tobytes()
    out += len_field(_RAW, raw)
    return bytes(out)


def loads(data: bytes) -> tuple[str, np.ndarray]:
    """The tensor's name and value (bits for the types numpy lacks: :func:`loads_tensor` says which)."""
    t = loads_tensor(data)
    return t.name, t.array


def loads_tensor(data: bytes) -> Tensor:
    try:
        return _loads(bytes(data))
    except TensorProtoError:
        raise
    except (ValueError, TypeError, OverflowError, MemoryError, IndexError) as exc:  # a defect, as a value
        raise TensorProtoError(f"unreadable TensorProto ({type(exc).__name__}: {exc})") from None


def _loads(data: bytes) -> Tensor:
    dims: list[int] = []
    code = 0
    raw_name = b""
    raw: bytes | None = None
    strings: list[bytes] = []
    typed: dict[int, list[bytes | int]] = {}
    for field, wire, value in fields(data):
        if wire not in _WIRES.get(field, (wire,)):
            raise TensorProtoError(f"field {field} has wire type {wire}, not one of its type")
        if field == _DIMS:
            dims.extend([signed64(value)] if isinstance(value, int) else map(signed64, decode_varints(value)))
        elif field == _DATA_TYPE and isinstance(value, int):
            code = value
        elif field == _NAME and isinstance(value, bytes):
            raw_name = value
        elif field == _RAW and isinstance(value, bytes):
            raw = value
        elif field == _STRING and isinstance(value, bytes):
            strings.append(value)
        elif field == _EXTERNAL or (field == _LOCATION and value == 1):
            raise TensorProtoError("tensors with external data are not supported")
        elif field in (_FLOAT, _DOUBLE, _INT32, _INT64, _UINT64):
            if field in _INTS and isinstance(value, bytes):  # packed varints: read now, as every codec does
                typed.setdefault(field, []).extend(decode_varints(value))
            else:
                typed.setdefault(field, []).append(value)
    name = _name(raw_name)
    if any(d < 0 for d in dims):
        raise TensorProtoError(f"{name or 'tensor'}: negative dimension in {dims}")
    if math.prod(d for d in dims if d) > MAX_ELEMENTS:  # a zero dim empties it; a dim no tensor has is a lie
        raise TensorProtoError(f"{name or 'tensor'}: shape {dims} claims more than {MAX_ELEMENTS} elements")
    count = math.prod(dims)
    shape = tuple(dims)
    if code == STRING:
        try:
            values = np.array([s.decode("utf-8") for s in strings] or [], dtype=object)
        except UnicodeDecodeError:
            raise TensorProtoError(f"{name or 'tensor'}: a string element is not UTF-8") from None
    else:
        dtype = storage_dtype(code)
        values = _from_raw(raw, code, dtype, count) if raw is not None else _typed_values(code, typed, count)
    if values.size != count:
        raise TensorProtoError(f"{name or 'tensor'}: {values.size} values for shape {list(shape)}")
    return Tensor(name, code, values.reshape(shape))


def _name(raw: bytes) -> str:
    """A tensor's name: UTF-8 without NUL (what every codec, and a C string, can carry unchanged)."""
    try:
        name = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise TensorProtoError("the tensor's name is not UTF-8") from None
    if "\x00" in name:
        raise TensorProtoError("the tensor's name holds a NUL byte")
    return name


def save(path: Path, array: Any, name: str = "", data_type: int | None = None) -> None:
    path.write_bytes(dumps(array, name, data_type))


def load(path: Path) -> tuple[str, np.ndarray]:
    t = load_tensor(path)
    return t.name, t.array


def load_tensor(path: Path) -> Tensor:
    try:
        return loads_tensor(path.read_bytes())
    except TensorProtoError as exc:
        raise TensorProtoError(f"{path}: {exc}") from None


def fields(data: bytes) -> list[tuple[int, int, int | bytes]]:
    """(field number, wire type, varint or bytes) of each field of one protobuf message."""
    out: list[tuple[int, int, int | bytes]] = []
    pos, n = 0, len(data)
    while pos < n:
        key, pos = _read_varint(data, pos)
        field, wire = key >> 3, key & 7
        value: int | bytes
        if wire == _VARINT:
            value, pos = _read_varint(data, pos)
        elif wire == _LEN:
            length, pos = _read_varint(data, pos)
            value = data[pos : pos + length]
            if len(value) != length:
                raise TensorProtoError("truncated field")
            pos += length
        elif wire in (_I64, _I32):
            size = 8 if wire == _I64 else 4
            value = data[pos : pos + size]
            if len(value) != size:
                raise TensorProtoError("truncated field")
            pos += size
        else:
            raise TensorProtoError(f"unsupported wire type {wire} (field {field})")
        if field == 0:
            raise TensorProtoError("field number 0")
        out.append((field, wire, value))
    return out


def _from_raw(raw: bytes, code: int, dtype: np.dtype, count: int) -> np.ndarray:
    bits = BITS.get(code, 8)
    if bits < 8:
        if len(raw) != math.ceil(count * bits / 8):
            raise TensorProtoError(f"{len(raw)} raw bytes for {count} {bits}-bit elements")
        return unpack_bits(raw, bits, count)
    if len(raw) != count * dtype.itemsize:
        raise TensorProtoError(f"{len(raw)} raw bytes for {count} elements of {dtype.itemsize} bytes")
    return np.frombuffer(raw, dtype=dtype).copy()


def pack_bits(values: np.ndarray, bits: int) -> bytes:
    per = 8 // bits
    v = values.astype(np.uint8) & ((1 << bits) - 1)
    padded = np.zeros(math.ceil(v.size / per) * per, dtype=np.uint8)
    padded[: v.size] = v
    lanes = padded.reshape(-1, per)
    packed = np.zeros(lanes.shape[0], dtype=np.uint8)
    for i in range(per):
        packed |= lanes[:, i] << (i * bits)
    return packed.tobytes()


def unpack_bits(raw: bytes, bits: int, count: int) -> np.ndarray:
    per = 8 // bits
    b = np.frombuffer(raw, dtype=np.uint8)
    lanes = np.stack([(b >> (i * bits)) & ((1 << bits) - 1) for i in range(per)], axis=1)
    return lanes.reshape(-1)[:count].astype(np.uint8)


def _typed_values(code: int, typed: dict[int, list[bytes | int]], count: int) -> np.ndarray:
    if code in (FLOAT, COMPLEX64, DOUBLE, COMPLEX128):
        single = code in (FLOAT, COMPLEX64)
        values = _fixed(typed.get(_FLOAT if single else _DOUBLE, []), "<f4" if single else "<f8")
        if code in (FLOAT, DOUBLE):
            return values
        if values.size % 2:  # a complex element is two values: real, imaginary
            raise TensorProtoError(f"{values.size} values, not an even number for complex elements")
        return values.view("<c8" if single else "<c16")
    if code == INT64:
        return np.array([signed64(v) for v in _ints(typed.get(_INT64, []))], dtype=np.int64)
    if code in (UINT32, UINT64):
        return np.array(_ints(typed.get(_UINT64, [])), dtype=np.uint64).astype(NATIVE[code])
    # int32_data: int32, int16, int8, uint16, uint8, bool, and float16 / bfloat16 / float8 as bits;
    # 4- and 2-bit types as packed bytes.
    ints = np.array([signed64(v) & 0xFFFFFFFF for v in _ints(typed.get(_INT32, []))], dtype=np.uint64)
    bits = BITS.get(code)
    if bits is not None and bits < 8:
        return unpack_bits(ints.astype(np.uint8).tobytes(), bits, min(count, ints.size * (8 // bits)))
    if code in (FLOAT16, BFLOAT16):
        return ints.astype(np.uint16).view(np.float16) if code == FLOAT16 else ints.astype(np.uint16)
    if bits is not None:
        return ints.astype(np.uint8)
    return ints.astype(np.uint32).view(np.int32).astype(NATIVE[code])


def _fixed(items: list[bytes | int], dtype: str) -> np.ndarray:
    chunks = b"".join(i for i in items if isinstance(i, bytes))
    size = np.dtype(dtype).itemsize
    if len(chunks) % size:
        raise TensorProtoError(f"{len(chunks)} bytes of packed {dtype} values")
    return np.frombuffer(chunks, dtype=dtype).copy()


def _ints(items: list[bytes | int]) -> list[int]:
    out: list[int] = []
    for item in items:
        if isinstance(item, bytes):
            out.extend(decode_varints(item))
        else:
            out.append(item)
    return out


def field_key(field: int, wire: int) -> bytes:
    return encode_varint((field << 3) | wire)


def len_field(field: int, payload: bytes) -> bytes:
    return field_key(field, _LEN) + encode_varint(len(payload)) + payload


def encode_varint(value: int) -> bytes:
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
            if result >= 1 << 64:
                raise TensorProtoError("varint over 64 bits")
            return result, pos
        shift += 7
        if shift > 63:
            raise TensorProtoError("varint too long")


def decode_varints(chunk: bytes) -> list[int]:
    out = []
    pos = 0
    while pos < len(chunk):
        value, pos = _read_varint(chunk, pos)
        out.append(value)
    return out


def signed64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


__all__ = [
    "BITS",
    "NAMES",
    "NATIVE",
    "Tensor",
    "TensorProtoError",
    "data_type_of",
    "decode_varints",
    "dumps",
    "encode_varint",
    "field_key",
    "fields",
    "len_field",
    "load",
    "load_tensor",
    "loads",
    "loads_tensor",
    "pack_bits",
    "save",
    "signed64",
    "storage_dtype",
    "unpack_bits",
]
