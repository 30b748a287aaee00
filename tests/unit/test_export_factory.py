"""Importing the user's factory: every mistake is one ConfigError naming model.factory (no torch)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ci_onnx.errors import ConfigError
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
