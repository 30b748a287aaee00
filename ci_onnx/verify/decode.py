"""Read a bundle's or an observation's ``.pb`` files on the judge's side, with onnx's own helpers.

numpy_helper decodes every element type (bfloat16, float8, int4 … as ml_dtypes arrays), and the
sequence, optional and map protos, so what the judge compares is what onnx itself would read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ci_onnx.observer.values import kind


class DecodeError(ValueError):
    """A file that is not the proto its declared type says."""


def load(path: Path, type_str: str = "") -> Any:
    """The value in ``path``: an ndarray, a list (sequence), a dict (map) or None (empty optional)."""
    k = kind(type_str) if type_str else "tensor"
    if k == "tensor":  # a numeric tensor: numpy alone reads it as numpy_helper does (no onnx import)
        from ci_onnx.contracts import tensorproto

        try:
            t = tensorproto.load_tensor(path)
            if t.data_type in tensorproto.NATIVE and t.data_type != tensorproto.STRING:
                return t.array
        except (OSError, tensorproto.TensorProtoError):
            pass  # onnx's reading below says what is wrong with it
    import onnx
    from onnx import numpy_helper

    proto: Any = {
        "tensor": onnx.TensorProto,
        "seq": onnx.SequenceProto,
        "optional": onnx.OptionalProto,
        "map": onnx.MapProto,
    }[k]()
    try:
        proto.ParseFromString(path.read_bytes())
        if k == "tensor":
            return numpy_helper.to_array(proto)
        if k == "seq":
            return numpy_helper.to_list(proto)
        if k == "optional":
            return numpy_helper.to_optional(proto)
        return numpy_helper.to_dict(proto)
    except Exception as exc:  # protobuf's DecodeError, numpy_helper's own
        raise DecodeError(f"{path}: not a readable {k} ({type(exc).__name__}: {exc})") from None
