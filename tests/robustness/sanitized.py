"""The native observer's parsers of untrusted bytes under AddressSanitizer and UBSan, over a mutation
corpus: tensorproto.c (every .pb file it reads), json.c and manifest.c (manifest.json), built with
the fuzz driver native_fuzz.c by the host's C compiler (gcc or clang: both ship the sanitizers).

:func:`session` mutates seed files (real TensorProto files of every element type as the Python codec
and onnx write them, the hostile files of :data:`HOSTILE`, a real manifest) for a bounded time, runs
every mutant through the driver in one process, and compares each verdict with the Python codec's on
the same bytes. Any sanitizer report, a driver that dies, or a file one codec accepts and the other
refuses (or writes back differently) is a finding.
"""

from __future__ import annotations

import dataclasses
import os
import random
import shutil
import struct
import subprocess
import time
from pathlib import Path

import numpy as np

from ci_onnx.contracts import tensorproto as tp
from ci_onnx.runners import native

DRIVER = Path(__file__).with_name("native_fuzz.c")
SANITIZE = (
    "-fsanitize=address,undefined,float-cast-overflow",
    "-fno-sanitize-recover=all",
    "-fno-omit-frame-pointer",
    "-g",
)
MAX_ALLOCATION_MB = 64
"""No seed needs more: an allocation past it is one made before the size was checked."""
SAN_ENV = {
    "ASAN_OPTIONS": f"detect_leaks=1:allocator_may_return_null=0:max_allocation_size_mb={MAX_ALLOCATION_MB}"
    ":exitcode=86:abort_on_error=0",
    "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1:exitcode=87",
    "LSAN_OPTIONS": "exitcode=88",
}
REPORT_MARKS = ("ERROR: AddressSanitizer", "runtime error:", "ERROR: LeakSanitizer", "SUMMARY: ")


def compiler() -> str | None:
    return shutil.which(os.environ.get("CC", "") or "cc") or shutil.which("gcc") or shutil.which("clang")


def build(out_dir: Path) -> Path:
    """The fuzz driver with the observer's own sources, strict warnings and both sanitizers."""
    cc = compiler()
    if cc is None:
        raise RuntimeError("no C compiler on PATH")
    sources = [native.SOURCES / n for n in ("tensorproto.c", "json.c", "manifest.c")]
    program = out_dir / "native_fuzz"
    argv = [cc, *native.BUILD_FLAGS, *SANITIZE, "-I", str(native.SOURCES), *map(str, sources), str(DRIVER)]
    done = subprocess.run([*argv, "-o", str(program)], capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(
            f"{cc} cannot build the sanitized fuzz driver (is the sanitizer runtime installed? gcc needs "
            f"libasan/libubsan, clang libclang-rt): {done.stderr.strip()[-800:]}"
        )
    return program


# --- seeds -----------------------------------------------------------------------------------------


def _varint(v: int) -> bytes:
    return tp.encode_varint(v)


def _key(field: int, wire: int) -> bytes:
    return tp.field_key(field, wire)


def _dims(*dims: int) -> bytes:
    return b"".join(_key(1, 0) + _varint(d) for d in dims)


HOSTILE: dict[str, bytes] = {
    # dims [2^34, 2^30] uint8 with empty raw_data: the element count wrapped to 0 (the bytes)
    "count-wraps-to-zero": bytes.fromhex("0880808080400880808080041002" + "4a00"),
    "complex64-odd-floats": _dims(1) + _key(2, 0) + _varint(tp.COMPLEX64) + tp.len_field(4, b"\0" * 4),
    "complex64-three-floats": _dims(3) + _key(2, 0) + _varint(tp.COMPLEX64) + tp.len_field(4, b"\0" * 12),
    "complex128-odd-doubles": _dims(1) + _key(2, 0) + _varint(tp.COMPLEX128) + tp.len_field(10, b"\0" * 8),
    "complex128-2^30-no-data": _dims(1 << 30) + _key(2, 0) + _varint(tp.COMPLEX128),
    "complex128-2^34-no-data": _dims(1 << 34) + _key(2, 0) + _varint(tp.COMPLEX128),
    "float-2^33-raw-4-bytes": _dims(1 << 33) + _key(2, 0) + _varint(tp.FLOAT) + tp.len_field(9, b"\0" * 4),
    "zero-dim-and-2^62": _dims(0, 1 << 62) + _key(2, 0) + _varint(tp.FLOAT) + tp.len_field(9, b""),
    "dims-multiply-past-2^64": _dims(1 << 32, 1 << 32, 1 << 32) + _key(2, 0) + _varint(tp.UINT8),
    "int4-2^34-no-data": _dims(1 << 34) + _key(2, 0) + _varint(tp.INT4),
    "string-2^30-no-data": _dims(1 << 30) + _key(2, 0) + _varint(tp.STRING),
    "negative-dim": _dims(2**64 - 1) + _key(2, 0) + _varint(tp.FLOAT),
    "unknown-type": _dims(1) + _key(2, 0) + _varint(999) + tp.len_field(9, b"\0" * 4),
}
"""Files the issue and its review found, each refused by both codecs."""


def tensor_seeds() -> dict[str, bytes]:
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(33)
    seeds: dict[str, bytes] = {}
    dtypes = ["float32", "float64", "int32", "int64", "uint8", "int8", "bool", "float16", "uint16", "int16",
              "uint32", "uint64", "complex64", "complex128"]  # fmt: skip
    for dtype in dtypes:
        a = (rng.normal(size=(2, 3)) * 50).astype(dtype)
        seeds[f"raw-{dtype}"] = tp.dumps(a, "x")
        seeds[f"numpy_helper-{dtype}"] = numpy_helper.from_array(a, "y").SerializeToString()
        if dtype not in ("float16",):
            flat = a.ravel().tolist()
            seeds[f"typed-{dtype}"] = helper.make_tensor(
                "t", helper.np_dtype_to_tensor_dtype(a.dtype), [2, 3], flat
            ).SerializeToString()
    seeds["strings"] = tp.dumps(np.array(["a", "héllo", ""], dtype=object), "s")
    seeds["int4"] = helper.make_tensor("q", TensorProto.INT4, [3], [1, -2, 3]).SerializeToString()
    seeds["uint2"] = tp.dumps(np.array([1, 3, 2, 0, 1], np.uint8), "u", tp.UINT2)
    seeds["bfloat16"] = tp.dumps(np.array([1, 2, 3], np.uint16), "b", tp.BFLOAT16)
    seeds["scalar"] = tp.dumps(np.float32(3.5))
    seeds["empty"] = tp.dumps(np.zeros((0, 3), np.float32), "e")
    return {**seeds, **{f"hostile-{k}": v for k, v in HOSTILE.items()}}


def manifest_seeds(tmp: Path) -> dict[str, bytes]:
    from tests import bundles

    real = (bundles.mlp_bundle(tmp / "seed-bundle") / "manifest.json").read_bytes()
    return {
        "real": real,
        "dim0-2^70": real.replace(b'"batch"', str(2**70).encode(), 1),
        "dim0-1e400": real.replace(b'"batch"', b"1e400", 1),
        "dim0-nan": real.replace(b'"batch"', b"-nan", 1),
        "dim0-fraction": real.replace(b'"batch"', b"2.5", 1),
        "lone-surrogate": real.replace(b'"x"', b'"\\ud800"', 1),
        "deep": b"[" * 200 + b"]" * 200,
        "truncated": real[: len(real) // 2],
    }


# --- mutation --------------------------------------------------------------------------------------

_INTERESTING = [0, 1, 0x7F, 0x80, 0xFF, 2**31, 2**32 - 1, 2**32, 2**34, 2**53, 2**62, 2**63, 2**64 - 1]


def mutate(data: bytes, rng: random.Random) -> bytes:
    """One to four byte-level edits: flips, inserts, deletes, truncation, splices of varints with
    interesting values (huge dims, lengths past the end), duplicated chunks."""
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(7)
        at = rng.randrange(len(out) + 1)
        if op == 0 and out:
            i = rng.randrange(len(out))
            out[i] ^= 1 << rng.randrange(8)
        elif op == 1:
            out[at:at] = bytes([rng.randrange(256)])
        elif op == 2 and out:
            del out[at : at + rng.randint(1, 8)]
        elif op == 3:
            out = out[:at]
        elif op == 4:
            out[at:at] = _varint(rng.choice(_INTERESTING))
        elif op == 5:
            field, wire = rng.choice([(1, 0), (2, 0), (9, 2), (4, 2), (10, 2), (5, 0), (6, 2), (7, 2)])
            out[at:at] = _key(field, wire) + _varint(rng.choice(_INTERESTING))
        elif op == 6 and out:
            i = rng.randrange(len(out))
            out[at:at] = out[i : i + rng.randint(1, 32)]
    return bytes(out)


def python_verdict(data: bytes) -> tuple[bool, bytes]:
    """The Python codec on the same bytes: (accepted, what it writes back)."""
    try:
        t = tp.loads_tensor(data)
    except tp.TensorProtoError:
        return False, b""
    return True, tp.dumps(t.array, t.name, t.data_type)


@dataclasses.dataclass
class Findings:
    cases: int = 0
    tensors: int = 0
    manifests: int = 0
    sanitizer_reports: int = 0
    driver_failures: int = 0
    disagreements: list[str] = dataclasses.field(default_factory=list)
    report: str = ""
    seconds: float = 0.0


def session(work: Path, seconds: float, seed: int = 33, chunk: int = 2000) -> Findings:
    """Mutants of every seed for about ``seconds``, in chunks of ``chunk`` records per driver run."""
    work.mkdir(parents=True, exist_ok=True)
    program = build(work)
    rng = random.Random(seed)
    tensors = list(tensor_seeds().items())
    manifests = list(manifest_seeds(work).items())
    found = Findings()
    t0 = time.monotonic()
    first = True
    while first or time.monotonic() - t0 < seconds:
        records: list[tuple[str, bytes]] = []
        if first:  # every seed as it is, once
            records += [("T", d) for _, d in tensors] + [("M", d) for _, d in manifests]
        while len(records) < chunk:
            if rng.random() < 0.85:
                records.append(("T", mutate(rng.choice(tensors)[1], rng)))
            else:
                records.append(("M", mutate(rng.choice(manifests)[1], rng)))
        first = False
        _run_chunk(program, work, records, found)
        if found.sanitizer_reports or found.driver_failures:
            break
    found.seconds = round(time.monotonic() - t0, 1)
    return found


def run_driver(
    program: Path, corpus: Path, records: list[tuple[str, bytes]]
) -> subprocess.CompletedProcess[str]:
    """The driver over ``records`` (written to ``corpus``), with the sanitizers' settings."""
    corpus.write_bytes(b"".join(struct.pack("<I", len(d)) + k.encode() + d for k, d in records))
    return subprocess.run(
        [str(program), str(corpus)],
        capture_output=True,
        text=True,
        errors="replace",
        timeout=300,
        env={**os.environ, **SAN_ENV},
    )


def _run_chunk(program: Path, work: Path, records: list[tuple[str, bytes]], found: Findings) -> None:
    done = run_driver(program, work / "corpus.bin", records)
    found.cases += len(records)
    found.tensors += sum(k == "T" for k, _ in records)
    found.manifests += sum(k == "M" for k, _ in records)
    if any(mark in done.stderr for mark in REPORT_MARKS):
        found.sanitizer_reports += 1
        found.report = done.stderr[-4000:]
        return
    lines = done.stdout.split("\n")[:-1]  # not splitlines: a reason may hold \x0b or \x1c
    if done.returncode != 0 or len(lines) != len(records):
        found.driver_failures += 1
        found.report = (
            f"rc {done.returncode}, {len(lines)} lines for {len(records)} records: {done.stderr[-2000:]}"
        )
        return
    for (kind, data), line in zip(records, lines, strict=True):
        if kind != "T":
            continue
        accepted, hexed = line.startswith("1 "), line[2:]
        py_ok, py_bytes = python_verdict(data)
        if accepted != py_ok or (accepted and bytes.fromhex(hexed) != py_bytes):
            found.disagreements.append(
                f"{data.hex()}: C {line[:120]!r}, Python {py_bytes.hex() if py_ok else 'refuses'}"
            )
