"""Importing the user's factory: every mistake is one ConfigError naming model.factory (no torch)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ci_onnx.contracts.errors import ConfigError
from ci_onnx.export import factory


def test_file_and_module_forms_load(tmp_path: Path) -> None:
    (tmp_path / "helper.py").write_text("VALUE = 3\n")
    (tmp_path / "net.py").write_text(
        "import helper\n\nclass Zoo:\n    @staticmethod\n    def build():\n        return helper.VALUE\n"
    )
    assert factory.load_callable("net.py:Zoo.build", tmp_path)() == 3
    assert factory.load_callable("json:dumps", tmp_path)([1]) == "[1]"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("missing.py:build", r"model.factory: .*missing.py does not exist"),
        ("net.py:nope", r"model.factory: net.py has no attribute 'nope'"),
        ("no_such_pkg.mod:build", r"model.factory: cannot import module 'no_such_pkg.mod'"),
        ("broken.py:build", r"model.factory: importing broken.py raised ZeroDivisionError"),
        ("net.py:VALUE", r"model.factory: 'net.py:VALUE' is not callable"),
    ],
)
def test_mistakes_name_the_key(tmp_path: Path, spec: str, message: str) -> None:
    (tmp_path / "net.py").write_text("VALUE = 1\n")
    (tmp_path / "broken.py").write_text("1 / 0\n")
    with pytest.raises(ConfigError, match=message):
        factory.load_callable(spec, tmp_path)


def test_check_path_fails_before_any_import(tmp_path: Path) -> None:
    factory.check_path("json:dumps", tmp_path)  # a module: nothing to check on disk
    with pytest.raises(ConfigError, match=r"model.factory: .*gone.py does not exist"):
        factory.check_path("sub/gone.py:build", tmp_path)


PLANNED = """\
version: 1
model:
  name: net
  factory: {factory}
  inputs: {{x: {{shape: [1, 3]}}}}
  outputs: [y]
targets: {{runtimes: ["1.20.1"], providers: [cpu]}}
"""

NET = """\
import torch
raise RuntimeError("plan ran the factory's file")  # plan reads it (ast) and never runs it

def build():
    return torch.nn.Identity()

class Wrapper:
    pass

if True:
    def build_small():
        return build()
"""


@pytest.mark.parametrize(
    ("factory_spec", "message"),
    [
        ("gone.py:build", r"onnx-gate\.yml:4: model\.factory: .*gone\.py does not exist"),
        (
            "net.py:buld",
            r"onnx-gate\.yml:4: model\.factory: net\.py defines no 'buld'; did you mean 'build'\?$",
        ),
        (
            "net.py:zzz",
            r"onnx-gate\.yml:4: model\.factory: net\.py defines no 'zzz'; it defines: Wrapper, build, build_small, torch$",
        ),
        ("bad.py:build", r"onnx-gate\.yml:4: model\.factory: bad\.py:1: invalid syntax"),
    ],
)
def test_plan_finds_a_missing_factory_with_the_config_line_and_without_importing_it(
    tmp_path: Path, factory_spec: str, message: str
) -> None:
    import re

    from click.testing import CliRunner

    from ci_onnx.cli import cli

    (tmp_path / "net.py").write_text(NET)
    (tmp_path / "bad.py").write_text("def build(:\n    pass\n")
    config = tmp_path / "onnx-gate.yml"
    config.write_text(PLANNED.format(factory=factory_spec))
    result = CliRunner().invoke(cli, ["plan", "--config", str(config)])
    assert result.exit_code == 2, result.output
    (line,) = result.stderr.strip().splitlines()
    assert re.search(message, line), line
    assert line.startswith(f"onnx-gate: error: {config}:4:")


def test_names_a_module_binds_at_its_top_level_or_none_where_only_running_it_tells(tmp_path: Path) -> None:
    import ast

    names = factory.top_level_names(ast.parse(NET))
    assert names == {"torch", "build", "Wrapper", "build_small"}
    assert factory.top_level_names(ast.parse("from models import *\n")) is None
    assert factory.top_level_names(ast.parse("def __getattr__(name):\n    return name\n")) is None
    (tmp_path / "lazy.py").write_text("def __getattr__(name):\n    return lambda: name\n")
    factory.check_path("lazy.py:anything", tmp_path)  # left to the import, which can tell
