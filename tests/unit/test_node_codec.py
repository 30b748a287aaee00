"""The JavaScript TensorProto codec of the node runner against the Python one: the same bytes."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from onnx import helper, numpy_helper

from ci_onnx.contracts import tensorproto

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


# Untrusted bytes: the JavaScript codec refuses what the Python codec refuses, with its own error.

FUZZ = Path(__file__).parents[1] / "support" / "tensorproto_fuzz.mjs"


def _js_verdicts(
    tmp_path: Path, files: list[bytes], *extra: str, node_flags: tuple[str, ...] = ()
) -> tuple[list[str], int]:
    import struct

    assert NODE is not None
    corpus = tmp_path / "corpus.bin"
    corpus.write_bytes(b"".join(struct.pack("<I", len(d)) + b"T" + d for d in files))
    argv = [NODE, *node_flags, str(FUZZ), str(corpus), *extra]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.split("\n")[:-1]
    assert len(lines) == len(files) + 1 and lines[-1].startswith("maxrss ")
    return lines[:-1], int(lines[-1].split()[1])


def _key(field: int, wire: int) -> bytes:
    return tensorproto.field_key(field, wire)


HOSTILE_JS = {
    "data-type-as-bytes": b"\x08\x02" + tensorproto.len_field(2, b"\x01"),
    "dims-as-fixed32": _key(1, 5) + b"\x02\x00\x00\x00" + b"\x10\x01",
    "raw-as-varint": b"\x08\x01\x10\x01" + _key(9, 0) + b"\x05",
    "name-as-varint": b"\x08\x01\x10\x01" + _key(8, 0) + b"\x05",
    "float-packed-odd-length": b"\x08\x01\x10\x01" + tensorproto.len_field(4, b"\x00" * 3),
    "negative-dim": b"\x08" + tensorproto.encode_varint(-2) + b"\x10\x01",
    "negative-dims-cancel": b"\x08"
    + tensorproto.encode_varint(-1)
    + b"\x08"
    + tensorproto.encode_varint(-1)
    + b"\x10\x01"
    + tensorproto.len_field(9, b"\x00" * 4),
    "name-not-utf8": b"\x08\x01\x10\x01"
    + tensorproto.len_field(8, b"\xff")
    + tensorproto.len_field(9, b"\x00" * 4),
    "string-not-utf8": b"\x08\x01\x10\x08" + tensorproto.len_field(6, b"\xc3"),
    "varint-over-64-bits": b"\x08" + b"\xff" * 9 + b"\x7f" + b"\x10\x01",
    "field-zero": b"\x00\x01",
    "group-wire-type": b"\x0b",
}


def test_hostile_files_are_refused_with_the_codecs_own_error_as_python_refuses_them(tmp_path: Path) -> None:
    from tests.robustness.sanitized import HOSTILE

    cases = {**HOSTILE_JS, **{k: v for k, v in HOSTILE.items() if "complex" not in k}}
    verdicts, _ = _js_verdicts(tmp_path, list(cases.values()))
    for (name, data), verdict in zip(cases.items(), verdicts, strict=True):
        assert verdict.startswith("0 TensorProtoError: "), (name, verdict)
        with pytest.raises(tensorproto.TensorProtoError):
            tensorproto.loads_tensor(data)


def test_a_mutation_corpus_gets_the_python_codecs_verdict_and_bytes(tmp_path: Path) -> None:
    import random

    from tests.robustness import sanitized

    rng = random.Random(7)
    seeds = [v for k, v in sanitized.tensor_seeds().items() if "complex" not in k and "int4" not in k
             and "uint2" not in k and "bfloat16" not in k]  # fmt: skip
    files = seeds + [sanitized.mutate(rng.choice(seeds), rng) for _ in range(6000)]
    verdicts, _ = _js_verdicts(tmp_path, files)
    wrong = []
    for data, verdict in zip(files, verdicts, strict=True):
        ok, back = sanitized.python_verdict(data)
        if verdict.startswith("0 "):
            if not verdict.startswith("0 TensorProtoError: ") or (ok and _node_has(data)):
                wrong.append((data.hex(), verdict, ok))
        elif not ok or bytes.fromhex(verdict[2:]) != back:
            wrong.append((data.hex(), verdict[:80], ok))
    assert not wrong, wrong[:10]


def _node_has(data: bytes) -> bool:
    """Whether onnxruntime-node has the tensor's type (the JS codec refuses the others, rightly)."""
    t = tensorproto.loads_tensor(data)
    return t.data_type in range(1, 14)


def test_an_8_mb_packed_field_decodes_without_a_big_int_per_value(tmp_path: Path) -> None:
    """In a 64 MB JavaScript heap: the values go straight into their typed array (off the heap);
    a BigInt and an array slot per value needed some 600 MB here."""
    import hashlib

    packed = bytes(range(1, 128)) * ((8 << 20) // 127)  # 8 MB of one-byte varints
    data = b"\x08" + tensorproto.encode_varint(len(packed)) + b"\x10\x06" + tensorproto.len_field(5, packed)
    verdicts, _ = _js_verdicts(tmp_path, [data], "--digest", node_flags=("--max-old-space-size=64",))
    expected = tensorproto.dumps(np.frombuffer(packed, np.uint8).astype(np.int32))
    assert verdicts[0] == f"1 {hashlib.sha256(expected).hexdigest()}"
