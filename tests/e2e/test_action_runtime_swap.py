"""The verify step's runtime swap, with pip, in a fresh virtual environment (needs the package index)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ci_onnx.action import runtime
from ci_onnx.contracts import proc

pytestmark = pytest.mark.e2e


def _python(venv: Path) -> str:
    return str(venv / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python"))


def _version_in(python: str) -> Callable[[str], str]:
    def installed(package: str) -> str:
        done = proc.run(
            [python, "-c", f"import importlib.metadata as m; print(m.version({package!r}))"], timeout=60
        )
        return done.stdout.strip() if done.ok else ""

    return installed


def _import_version(python: str) -> str:
    done = proc.run([python, "-c", "import onnxruntime; print(onnxruntime.__version__)"], timeout=120)
    assert done.ok, done.stderr
    return done.stdout.strip()


def test_swap_version_then_flavour(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    proc.run([sys.executable, "-m", "venv", venv], timeout=120, check=True)
    python = _python(venv)
    proc.run([python, "-m", "pip", "install", "-q", "onnxruntime==1.32.0", "numpy"], timeout=600, check=True)
    installed = _version_in(python)

    change = runtime.plan_change("ort1.20.1-cpu-op17-dynamo", installed)
    assert change.requirements == ("onnxruntime==1.20.1",)
    runtime.apply(change, python=python)
    assert installed("onnxruntime") == "1.20.1"
    assert _import_version(python) == "1.20.1"
    assert not runtime.plan_change("ort1.20.1-cpu-op17-dynamo", installed).needed

    change = runtime.plan_change("ort1.24.1-openvino-op17-dynamo", installed)
    assert change.uninstall == ("onnxruntime",)
    runtime.apply(change, python=python)
    assert installed("onnxruntime") == ""
    assert installed("onnxruntime-openvino") == "1.24.1"
    providers = proc.run(
        [python, "-c", "import onnxruntime as o; print(o.get_available_providers())"], timeout=120
    )
    assert "OpenVINOExecutionProvider" in providers.stdout, providers.stderr
