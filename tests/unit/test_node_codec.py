"""The JavaScript TensorProto codec of the node runner against the Python one: the same bytes."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from onnx import helper, numpy_helper

from ci_onnx import tensorproto

NODE = shutil.which("node")
ROUNDTRIP = Path(__file__).parents[1] / "support" / "tensorproto_roundtrip.mjs"
pytestmark = pytest.mark.skipif(NODE is None, reason="the node runner's codec needs Node.js on PATH")

RNG = np.random.default_rng(0)
ARRAYS = {
    "float32": RNG.standard_normal((2, 3, 4)).astype(np.float32),
    "float32_special": np.array([np.nan, np.inf, -np.inf, -0.0, 1e-45], dtype=np.float32),
    "float64": RNG.standard_normal((5,)),
    "float16": RNG.standard_normal((3, 2)).astype(np.float16),
    "int8": np.array([-128, -1, 0, 127], dtype=np.int8),
    "uint8": np.arange(250, 256, dtype=np.uint8),
    "int16": np.array([-32768, 5, 32767], dtype=np.int16),
    "uint16": np.array([0, 65535], dtype=np.uint16),
    "int32": np.array([[-(2**31), 0], [1, 2**31 - 1]], dtype=np.int32),
    "uint32": np.array([0, 2**32 - 1], dtype=np.uint32),
    "int64": np.array([-(2**63), -1, 0, 2**63 - 1], dtype=np.int64),
    "uint64": np.array([0, 2**64 - 1], dtype=np.uint64),
    "bool": np.array([[True, False, True]]),
    "scalar": np.array(3.5, dtype=np.float32),
    "empty": np.zeros((0, 3), dtype=np.float32),
    "string": np.array(["a", "", "ünï"], dtype=object),
}


def roundtrip(src: Path, dst: Path) -> None:
    assert NODE is not None
    subprocess.run([NODE, str(ROUNDTRIP), str(src), str(dst)], check=True, timeout=60)


def test_js_writes_back_the_bytes_the_python_codec_wrote(tmp_path: Path) -> None:
    src = tmp_path / "python"
    src.mkdir()
    for name, arr in ARRAYS.items():
        (src / f"{name}.pb").write_bytes(tensorproto.dumps(arr, name))
    roundtrip(src, tmp_path / "js")
    for name, arr in ARRAYS.items():
        assert (tmp_path / "js" / f"{name}.pb").read_bytes() == (src / f"{name}.pb").read_bytes(), name
        # and onnx itself reads what JavaScript wrote as the same tensor
        back = numpy_helper.to_array(_parse((tmp_path / "js" / f"{name}.pb").read_bytes()))
        assert back.shape == arr.shape, name
        if arr.dtype == object:
            assert [b if isinstance(b, str) else b.decode() for b in back.flatten()] == list(arr.flatten())
        else:
            assert back.tobytes() == arr.tobytes(), name


def test_js_reads_the_typed_fields_onnx_writes_and_writes_them_as_python_would(tmp_path: Path) -> None:
    src = tmp_path / "onnx"
    src.mkdir()
    typed = {k: v for k, v in ARRAYS.items() if k not in ("string", "float16", "empty")}
    for name, arr in typed.items():
        t = helper.make_tensor(
            name, helper.np_dtype_to_tensor_dtype(arr.dtype), arr.shape, arr.flatten().tolist()
        )
        assert not t.raw_data  # int32_data, int64_data, float_data … not raw bytes
        (src / f"{name}.pb").write_bytes(t.SerializeToString())
    roundtrip(src, tmp_path / "js")
    for name, arr in typed.items():
        assert (tmp_path / "js" / f"{name}.pb").read_bytes() == tensorproto.dumps(arr, name), name


def _parse(data: bytes):  # type: ignore[no-untyped-def]
    from onnx import TensorProto

    t = TensorProto()
    t.ParseFromString(data)
    return t
