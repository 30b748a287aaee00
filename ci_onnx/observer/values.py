"""Values of any ONNX type on the runner's side (numpy + onnxruntime only): files ↔ feeds ↔ files.

A value's type is a string in onnxruntime's notation (what ``NodeArg.type`` says): ``tensor(float)``,
``seq(tensor(int64))``, ``optional(seq(tensor(float)))``, ``map(int64,tensor(float))``. A bundle's
manifest carries it for every input and output, so the runner knows which proto a ``.pb`` file holds:
TensorProto, SequenceProto, OptionalProto or MapProto.

In memory: a tensor is a :class:`tensorproto.Tensor`; a sequence a list; an optional ``None`` or
its value; a map a dict.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from ci_onnx.contracts import tensorproto
from ci_onnx.contracts.tensorproto import Tensor, TensorProtoError, storage_dtype

Value = Any
CODES = {name: code for code, name in tensorproto.NAMES.items()}
# SequenceProto / OptionalProto elem_type, and their value fields.
_TENSOR, _SEQ, _MAP, _OPT = 1, 3, 4, 5
_SEQ_FIELDS = {_TENSOR: 3, _SEQ: 5, _MAP: 6, _OPT: 7}
_OPT_FIELDS = {_TENSOR: 3, _SEQ: 5, _MAP: 6, _OPT: 7}


def inner(type_str: str) -> str:
    """``seq(tensor(float))`` → ``tensor(float)``."""
    return type_str[type_str.index("(") + 1 : -1]


def kind(type_str: str) -> str:
    return type_str.split("(", 1)[0] if "(" in type_str else "tensor"


def element_names(type_str: str) -> list[str]:
    """The element types inside a value type, in onnxruntime's names: ``seq(tensor(float))`` → float."""
    if "(" not in type_str or type_str.startswith("tensor("):
        return [tensorproto.NAMES.get(element_code(type_str), type_str)] if type_str else []
    if kind(type_str) == "map":
        key, value = inner(type_str).split(",", 1)
        return [*element_names(key), *element_names(value)]
    return element_names(inner(type_str))


def element_code(type_str: str) -> int:
    """``tensor(float)`` (or a bare ``float`` / numpy name) → its TensorProto data type."""
    name = inner(type_str) if type_str.startswith("tensor(") else type_str
    if name.replace("_", "") in CODES:  # onnxruntime's float8e4m3fn, ml_dtypes' float8_e4m3fn
        return CODES[name.replace("_", "")]
    try:
        return tensorproto.data_type_of(np.dtype(name))
    except TypeError:
        raise TensorProtoError(f"unknown element type {type_str!r}") from None


# Files → values.


def loads(data: bytes, type_str: str) -> Value:
    k = kind(type_str)
    if k == "tensor":
        return tensorproto.loads_tensor(data)
    if k == "seq":
        return _load_sequence(data, inner(type_str))
    if k == "optional":
        _, value = _first_value(data, _OPT_FIELDS)
        return None if value is None else loads(value, inner(type_str))
    if k == "map":
        return _load_map(data, type_str)
    raise TensorProtoError(f"values of type {type_str!r} are not supported")


def _first_value(data: bytes, by_elem: dict[int, int]) -> tuple[int, bytes | None]:
    elem, value = 0, None
    for field, _, v in tensorproto.fields(data):
        if field == 2 and isinstance(v, int):
            elem = v
        elif field in by_elem.values() and isinstance(v, bytes):
            value = v
    return elem, value


def _load_sequence(data: bytes, elem_type: str) -> list[Value]:
    field = _SEQ_FIELDS.get({"tensor": _TENSOR, "seq": _SEQ, "map": _MAP, "optional": _OPT}[kind(elem_type)])
    return [
        loads(v, elem_type) for f, _, v in tensorproto.fields(data) if f == field and isinstance(v, bytes)
    ]


def _load_map(data: bytes, type_str: str) -> dict[Any, Value]:
    key_type, value_type = inner(type_str).split(",", 1)
    keys: list[Any] = []
    values: list[Value] = []
    for field, _, v in tensorproto.fields(data):
        if field == 3:
            keys.extend([v] if isinstance(v, int) else tensorproto.decode_varints(v))
        elif field == 4 and isinstance(v, bytes):
            keys.append(v.decode("utf-8", "replace"))
        elif field == 5 and isinstance(v, bytes):
            values = _load_sequence(v, value_type)
    if key_type != "string":
        keys = [tensorproto.signed64(k) for k in keys]
    if len(keys) != len(values):
        raise TensorProtoError(f"a map with {len(keys)} keys and {len(values)} values")
    return dict(zip(keys, values, strict=True))


# Values → files.


def dumps(value: Value, type_str: str, name: str = "") -> bytes:
    k = kind(type_str)
    named = tensorproto.len_field(1, name.encode()) if name else b""
    if k == "tensor":
        t = value if isinstance(value, Tensor) else Tensor(name, element_code(type_str), np.asarray(value))
        return tensorproto.dumps(t.array, name, t.data_type)
    if k == "seq":
        elem = inner(type_str)
        code = {"tensor": _TENSOR, "seq": _SEQ, "map": _MAP, "optional": _OPT}[kind(elem)]
        out = named + tensorproto.field_key(2, 0) + tensorproto.encode_varint(code)
        for item in value:
            out += tensorproto.len_field(_SEQ_FIELDS[code], dumps(item, elem))
        return out
    if k == "optional":
        elem = inner(type_str)
        if value is None:
            return named
        code = {"tensor": _TENSOR, "seq": _SEQ, "map": _MAP, "optional": _OPT}[kind(elem)]
        body = tensorproto.field_key(2, 0) + tensorproto.encode_varint(code)
        return named + body + tensorproto.len_field(_OPT_FIELDS[code], dumps(value, elem))
    if k == "map":
        key_type, value_type = inner(type_str).split(",", 1)
        out = named + tensorproto.field_key(2, 0) + tensorproto.encode_varint(element_code(key_type))
        for key in value:
            if key_type == "string":
                out += tensorproto.len_field(4, str(key).encode())
            else:
                out += tensorproto.field_key(3, 0) + tensorproto.encode_varint(int(key))
        return out + tensorproto.len_field(5, dumps(list(value.values()), f"seq({value_type})"))
    raise TensorProtoError(f"values of type {type_str!r} are not supported")


# Values ↔ onnxruntime.


def to_feed(value: Value, ort: Any) -> Any:
    """What onnxruntime's ``InferenceSession.run`` accepts for ``value``."""
    if isinstance(value, Tensor):
        if value.data_type not in tensorproto.BITS:
            return value.array
        return _ortvalue(value, ort)
    if isinstance(value, list):
        return [to_feed(v, ort) for v in value]
    if isinstance(value, dict):
        return {k: to_feed(v, ort) for k, v in value.items()}
    return value


def _ortvalue(t: Tensor, ort: Any) -> Any:
    """An OrtValue of a type numpy lacks, from its raw buffer (packed for 4- and 2-bit types).

    onnxruntime takes the shape from the array and reads the bytes from its buffer, so sub-byte
    types go in an array of the tensor's shape whose first bytes are the packed data.
    """
    bits = tensorproto.BITS[t.data_type]
    if bits >= 8:
        # np.array, not np.ascontiguousarray: that one makes a 0-d array 1-d.
        return ort.OrtValue.ortvalue_from_numpy_with_onnx_type(np.array(t.array, order="C"), t.data_type)
    packed = np.frombuffer(tensorproto.pack_bits(t.array.reshape(-1), bits), dtype=np.uint8)
    buffer = np.zeros(max(t.array.size, packed.size, 1), dtype=np.uint8)
    buffer[: packed.size] = packed
    holder: np.ndarray = buffer[: t.array.size].reshape(t.array.shape)
    return ort.OrtValue.ortvalue_from_numpy_with_onnx_type(holder, t.data_type)


def needs_ort_values(output_types: list[str]) -> bool:
    """Whether some output has an element type numpy lacks (then ``run`` cannot return it)."""
    return any(kind(t) == "tensor" and element_code(t) in tensorproto.BITS for t in output_types)


def from_ortvalue(v: Any) -> Value:
    """A tensor OrtValue as a Tensor; bits read from its buffer where numpy has no type."""
    code = element_code(v.data_type())
    shape = tuple(v.shape())
    if code not in tensorproto.BITS:
        return Tensor("", code, np.asarray(v.numpy()))
    raw = ctypes.string_at(v.data_ptr(), v.tensor_size_in_bytes()) if v.tensor_size_in_bytes() else b""
    count = int(np.prod(shape, dtype=np.int64))
    bits = tensorproto.BITS[code]
    if bits < 8:
        arr = tensorproto.unpack_bits(raw, bits, count)
    else:
        arr = np.frombuffer(raw, dtype=tensorproto.storage_dtype(code)).copy()
    return Tensor("", code, arr.reshape(shape))


def from_output(value: Any, type_str: str) -> Value:
    """What ``InferenceSession.run`` returned, in this module's terms."""
    k = kind(type_str)
    if value is None:
        return None
    if k == "optional":
        return from_output(value, inner(type_str))
    if k == "seq":
        return [from_output(v, inner(type_str)) for v in value]
    if k == "map":
        # onnxruntime returns a map's values as Python scalars: they have the map's declared type.
        value_type = inner(type_str).split(",", 1)[1]
        code = element_code(value_type)
        return {
            key: Tensor("", code, np.asarray(v, dtype=storage_dtype(code)))
            if np.isscalar(v)
            else from_output(v, value_type)
            for key, v in value.items()
        }
    if isinstance(value, Tensor):
        return value
    arr = np.asarray(value)
    if arr.dtype.kind in "OUS":
        return Tensor("", tensorproto.STRING, arr.astype(object))
    return Tensor("", tensorproto.data_type_of(arr.dtype), arr)  # what came back, not what was declared
