"""Bundles that lie to the runtime (truncated, missing or lying-dims references, a runner output file that
vanished): each becomes an ``error`` result with its JSON and JUnit, never a traceback, never lost.
They run the real runner on this environment's onnxruntime, so they are e2e."""

from __future__ import annotations

import json
import stat
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from ci_onnx.cli import cli
from ci_onnx.contracts import bundle as bundle_mod
from tests.robustness.test_corpus import PLANTED, TOKEN_NAMES

pytestmark = pytest.mark.e2e
TARGET = "ort1.32.0-cpu-op17-onnx"
REF = "test_data_set_0/output_0.pb"


def _rehash(b: Path) -> None:
    path = b / bundle_mod.MANIFEST
    data = json.loads(path.read_text())
    data["files"] = bundle_mod.hash_files(b)
    path.write_text(json.dumps(data))


def _tensor(dims: list[int], values: int, name: str = "logits") -> bytes:
    """A float TensorProto written by hand: dims (field 1), data_type 1 (field 2), name (8), raw_data (9)."""

    def varint(n: int) -> bytes:
        n &= (1 << 64) - 1  # negative dims: as protobuf writes an int64
        out = bytearray()
        while True:
            byte, n = n & 0x7F, n >> 7
            out.append(byte | (0x80 if n else 0))
            if not n:
                return bytes(out)

    msg = b"".join(b"\x08" + varint(d) for d in dims) + b"\x10\x01"
    msg += b"\x42" + varint(len(name)) + name.encode()
    raw = b"\x00" * 4 * values
    return msg + b"\x4a" + varint(len(raw)) + raw


def _write(rel: str, data: bytes) -> Callable[[Path], None]:
    def edit(b: Path) -> None:
        (b / rel).write_bytes(data)
        _rehash(b)

    return edit


def _truncate(rel: str) -> Callable[[Path], None]:
    def edit(b: Path) -> None:
        raw = (b / rel).read_bytes()
        (b / rel).write_bytes(raw[: len(raw) // 3])
        _rehash(b)

    return edit


def _remove(rel: str) -> Callable[[Path], None]:
    def edit(b: Path) -> None:
        (b / rel).unlink()
        _rehash(b)

    return edit


EDITS: dict[str, Callable[[Path], None]] = {
    "reference-truncated": _truncate(REF),
    "reference-missing": _remove(REF),
    "reference-lying-dims": _write(REF, _tensor([1000, 4], 64)),
    "reference-negative-dims": _write(REF, _tensor([-16, 4], 64)),
    "reference-varint-overflow": _write(REF, b"\x08" + b"\xff" * 10 + b"\x01"),
    "reference-empty": _write(REF, b""),
    "input-truncated": _truncate("test_data_set_0/input_0.pb"),
    "input-lying-dims": _write("test_data_set_0/input_0.pb", _tensor([16, 9999], 16 * 8, "x")),
}


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests import bundles

    return bundles.mlp_bundle(tmp_path_factory.mktemp("e2e") / "bundle")


def _verify(b: Path, out: Path, python: str = sys.executable) -> tuple[int, str]:
    argv = ["verify", "--bundle", str(b), "--target", TARGET, "--out", str(out), "--python", python]
    r = CliRunner().invoke(cli, argv, env={k: PLANTED for k in TOKEN_NAMES}, catch_exceptions=True)
    assert r.exception is None or isinstance(r.exception, SystemExit), r.output
    assert "Traceback" not in r.output and PLANTED not in r.output
    return r.exit_code, r.output


def _written(out: Path) -> dict[str, object]:
    result = json.loads((out / "results" / f"{TARGET}.json").read_text())
    assert (out / "junit" / f"{TARGET}.xml").is_file()
    return result


@pytest.mark.parametrize("name", list(EDITS))
def test_a_bundle_that_lies_is_an_error_result(name: str, good: Path, tmp_path: Path) -> None:
    import shutil

    b = tmp_path / "bundle"
    shutil.copytree(good, b)
    EDITS[name](b)
    code, out = _verify(b, tmp_path / "out")
    assert code == 1, out
    result = _written(tmp_path / "out")
    assert result["status"] in ("error", "failed"), result["summary"]


def test_a_runner_output_file_that_vanished_is_an_error_result(good: Path, tmp_path: Path) -> None:
    wrapper = tmp_path / "python"
    wrapper.write_text(
        "#!/bin/sh\n"
        'OUT=""; prev=""\n'
        'for a in "$@"; do [ "$prev" = "--out" ] && OUT="$a"; prev="$a"; done\n'
        f'"{sys.executable}" "$@" || exit $?\n'
        'find "$OUT" -name "*.pb" | head -1 | xargs rm -f\n'
    )
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    code, out = _verify(good, tmp_path / "out", str(wrapper))
    assert code == 1, out
    result = _written(tmp_path / "out")
    assert result["status"] == "error" and "cannot be compared" in json.dumps(result)
