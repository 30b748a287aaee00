"""The runner imports only the standard library, numpy and onnxruntime: what a target environment holds."""

from __future__ import annotations

import sys
from pathlib import Path

from ci_onnx import proc

ROOT = Path(__file__).parents[2]

BLOCK = """
import importlib.abc, sys
FORBIDDEN = {forbidden!r}
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in FORBIDDEN:
            raise ImportError("forbidden in a target environment: " + name)
sys.meta_path.insert(0, Block())
"""


def _python(code: str) -> proc.Completed:
    return proc.run([sys.executable, "-c", code], cwd=ROOT, timeout=120)


def test_runner_modules_need_only_numpy_and_onnxruntime() -> None:
    forbidden = ["onnx", "torch", "click", "jsonschema", "ruamel", "jinja2", "requests", "onnxscript"]
    code = BLOCK.format(forbidden=forbidden) + (
        "import ci_onnx.runners.ort, ci_onnx.runners.placement, ci_onnx.runners.measure\n"
        "import ci_onnx.runners.feeds, ci_onnx.tensorproto\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('onnxruntime', 'onnx', 'torch')))\n"
    )
    done = _python(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"  # onnxruntime itself is imported only when a runner runs


def test_verify_help_imports_no_runtime() -> None:
    code = (
        "import sys\nfrom click.testing import CliRunner\nfrom ci_onnx.cli import cli\n"
        "r = CliRunner().invoke(cli, ['verify', '--help'])\nassert r.exit_code == 0, r.output\n"
        "print(sorted(m for m in ('torch', 'onnx', 'onnxruntime') if m in sys.modules))\n"
    )
    done = _python(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
