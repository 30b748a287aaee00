"""Longer coverage-guided fuzzing with atheris (optional; not installed or run in CI).

    pip install atheris
    python -m tests.robustness.atheris_fuzz junit  -max_total_time=240
    python -m tests.robustness.atheris_fuzz config -max_total_time=240
    python -m tests.robustness.atheris_fuzz result -max_total_time=240

Each target feeds the bytes atheris makes to one reader; any exception other than the reader's own
error type is a finding (atheris prints the input and writes it as crash-*). Add a finding to the
bad-input corpus (corpus.py) once it is fixed, so it stays fixed.
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from ci_onnx import config
from ci_onnx.contracts.errors import ConfigError, UsageError
from ci_onnx.contracts.results import read_result
from ci_onnx.report import junit_reader

_TMP = Path(tempfile.mkdtemp(prefix="onnx-gate-fuzz-"))


def junit(data: bytes) -> None:
    path = _TMP / "junit.xml"
    path.write_bytes(data)
    junit_reader.read_file(path)  # documented never to raise


def config_target(data: bytes) -> None:
    path = _TMP / "onnx-gate.yml"
    path.write_bytes(data)
    with contextlib.suppress(ConfigError):
        config.load(path)


def result(data: bytes) -> None:
    path = _TMP / "result.json"
    path.write_bytes(data)
    with contextlib.suppress(UsageError):
        read_result(path)


TARGETS: dict[str, Callable[[bytes], None]] = {"junit": junit, "config": config_target, "result": result}


def main(argv: list[str]) -> None:
    import atheris  # type: ignore[import-not-found]

    if not argv or argv[0] not in TARGETS:
        raise SystemExit(__doc__)
    target = TARGETS[argv[0]]
    atheris.Setup([sys.argv[0], *argv[1:]], target)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv[1:])
