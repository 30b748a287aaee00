"""The observer imports only the standard library, numpy and onnxruntime: what a target environment holds."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ci_onnx import matrix
from ci_onnx.contracts import proc
from ci_onnx.observer import CONTRACTS
from tests.support import imports

ROOT = Path(__file__).parents[2]

BLOCK = """
import importlib.abc, sys
FORBIDDEN = {forbidden!r}
ALLOWED = {allowed!r}
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in FORBIDDEN or (name.startswith("ci_onnx") and name not in ALLOWED):
            raise ImportError("forbidden in a target environment: " + name)
sys.meta_path.insert(0, Block())
"""


def _python(code: str) -> proc.Completed:
    return proc.run([sys.executable, "-c", code], cwd=ROOT, timeout=120)


ENGINES = {info.package for info in matrix.runners().values() if info.releases}
"""The engine of each kind that runs its own (openvino, tract): one per environment, imported only
by that kind's observer."""
ENVIRONMENT_PACKAGES = {"numpy", "onnxruntime", *ENGINES}
"""What a target's environment holds besides the standard library (and the ci_onnx link)."""
FORBIDDEN = ["onnx", "torch", "click", "jsonschema", "ruamel", "jinja2", "requests", "onnxscript", "yaml"]


def _in_environment() -> list[str]:
    return sorted(
        m for m in imports.modules() if m == "ci_onnx.observer" or m.startswith("ci_onnx.observer.")
    )


def _outside_the_rule(module: str) -> list[str]:
    """What ``module`` (or a contract it stands on) imports that an environment does not hold."""
    allowed = {*_in_environment(), *CONTRACTS}
    problems = []
    for e in imports.edges_of(module):
        if e.target.startswith("ci_onnx"):
            if e.target not in allowed:
                problems.append(f"{module}:{e.line} imports {e.target}")
        elif e.target not in sys.stdlib_module_names and e.target not in ENVIRONMENT_PACKAGES:
            problems.append(f"{module}:{e.line} imports {e.target}")
    return problems


def test_every_in_environment_module_imports_only_the_observer_its_contracts_numpy_and_onnxruntime() -> None:
    """Read from the source, every import of every module of ci_onnx.observer and of the contracts it
    stands on, in a function or not: an import the environment cannot serve fails only when that
    code path runs there, on a user's target, so it must fail here first."""
    modules = _in_environment()
    assert {
        "ci_onnx.observer.ort",
        "ci_onnx.observer.coldstart",
        "ci_onnx.observer.jobs",
        "ci_onnx.observer.triage",  # the triage's observer
    } <= set(modules)
    problems = [p for m in [*modules, *CONTRACTS] for p in _outside_the_rule(m)]
    assert problems == []


def test_the_rule_finds_an_import_the_environment_lacks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check above can fail: a lazy import of the config (which needs ruamel and jsonschema)."""
    bad = tmp_path / "ci_onnx" / "observer" / "bad.py"
    bad.parent.mkdir(parents=True)
    bad.write_text("def f():\n    from ci_onnx import config\n    import yaml\n")
    monkeypatch.setitem(imports.modules(), "ci_onnx.observer.bad", bad)
    assert _outside_the_rule("ci_onnx.observer.bad") == [
        "ci_onnx.observer.bad:2 imports ci_onnx.config",
        "ci_onnx.observer.bad:3 imports yaml",
    ]


def test_every_in_environment_module_imports_with_only_numpy_and_onnxruntime() -> None:
    """The same rule, run: each module imported in a child that refuses every other package and every
    part of onnx-gate outside the observer and its contracts; onnxruntime only when an observer runs."""
    allowed = [*_in_environment(), *CONTRACTS]
    code = BLOCK.format(forbidden=FORBIDDEN, allowed=allowed) + (
        "".join(f"import {m}\n" for m in _in_environment())
        + "print(sorted(m for m in sys.modules if m.split('.')[0] in ('onnxruntime', 'onnx', 'torch')))\n"
    )
    done = _python(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"  # onnxruntime itself is imported only when a runner runs


def test_an_engines_observer_imports_its_engine_and_nothing_else_outside_the_environment() -> None:
    """Each kind's engine is allowed in its own observer only, and in the cold start's fresh process,
    which opens the model on whichever runtime its spec names: the shared modules import no engine."""
    for module in _in_environment():
        engines = {e.target.split(".")[0] for e in imports.edges_of(module)} & ENGINES
        own = module.removeprefix("ci_onnx.observer.").removesuffix("_engine")
        assert engines <= (ENGINES if module == "ci_onnx.observer.serve_once" else {own}), module
    assert {"openvino", "tract"} <= {
        e.target for e in imports.edges_of("ci_onnx.observer.serve_once")
    }  # the rule above is not empty
    assert sorted(ENGINES) == ["openvino", "tract"]


def test_verify_help_imports_no_runtime() -> None:
    code = (
        "import sys\nfrom click.testing import CliRunner\nfrom ci_onnx.cli import cli\n"
        "r = CliRunner().invoke(cli, ['verify', '--help'])\nassert r.exit_code == 0, r.output\n"
        "print(sorted(m for m in ('torch', 'onnx', 'onnxruntime') if m in sys.modules))\n"
    )
    done = _python(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
