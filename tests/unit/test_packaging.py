"""The wheel's layout as pyproject.toml declares it, and the locator of the declared data.

The wheel itself is built and installed in tests/e2e/test_wheel.py; these checks read the
configuration and the checkout, so a package folder or a data file that would be left out of the
wheel fails here, fast.
"""

from __future__ import annotations

import fnmatch
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from ci_onnx import _data
from ci_onnx.contracts.errors import EnvironmentProblem

ROOT = Path(__file__).resolve().parents[2]
SETUPTOOLS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def _source_dir(package: str) -> Path:
    """Where setuptools takes ``package`` from: its package-dir mapping, else its dotted path."""
    mapping = SETUPTOOLS.get("package-dir", {})
    if package in mapping:
        return ROOT / mapping[package]
    return ROOT.joinpath(*package.split("."))


def _shipped() -> set[Path]:
    """The files of the checkout that some package-data glob ships."""
    shipped: set[Path] = set()
    for owner, globs in SETUPTOOLS.get("package-data", {}).items():
        base = _source_dir(owner)
        for glob in globs:
            shipped |= {p for p in base.glob(glob) if p.is_file()}
    return shipped


def test_every_package_folder_under_ci_onnx_is_listed() -> None:
    listed = set(SETUPTOOLS["packages"])
    on_disk = {
        ".".join(d.relative_to(ROOT).parts)
        for d in [ROOT / "ci_onnx", *(ROOT / "ci_onnx").rglob("*")]
        if d.is_dir() and d.name != "__pycache__" and any(f.is_file() for f in d.iterdir())
    }
    assert on_disk - listed == set(), "add these to [tool.setuptools] packages in pyproject.toml"
    for package in listed:
        assert _source_dir(package).is_dir(), package


def test_every_declared_data_file_is_shipped() -> None:
    data = [
        p
        for folder in (_data.MATRIX, _data.TEMPLATES, "ci_onnx/schemas", "ci_onnx/runners/node")
        for p in (ROOT / folder).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    ]
    assert any(p.suffix == ".toml" for p in data) and any(p.suffix == ".j2" for p in data)
    shipped = _shipped()
    assert sorted(str(p.relative_to(ROOT)) for p in set(data) - shipped) == []


def test_the_mapped_folders_reach_the_image() -> None:
    ignore = (ROOT / ".dockerignore").read_text().splitlines()
    for folder in {Path(d).parts[0] for d in SETUPTOOLS["package-dir"].values()}:
        assert f"!{folder}/" in ignore, f".dockerignore drops {folder}/, which the wheel ships"


def test_a_checkout_finds_the_data_at_the_repository_root() -> None:
    assert _data.matrix_dir() == ROOT / "matrix"
    assert _data.templates_dir() == ROOT / "templates"
    names = {
        f"{package}:{p.name}"
        for package, globs in SETUPTOOLS["package-data"].items()
        if package.startswith("ci_onnx._data")
        for p in _source_dir(package).iterdir()
        if any(fnmatch.fnmatchcase(p.name, g) for g in globs)
    }
    assert "ci_onnx._data.matrix:runtimes.toml" in names
    assert "ci_onnx._data.templates.workflows:pr-gate.yml.j2" in names


def test_a_package_linked_into_another_folder_still_finds_the_data(tmp_path: Path) -> None:
    """The Python runner links the package into a temporary folder and runs it from there."""
    (tmp_path / "ci_onnx").symlink_to(ROOT / "ci_onnx", target_is_directory=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": str(tmp_path)}
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from ci_onnx import _data, matrix; print(_data.matrix_dir()); matrix.runtimes()",
        ],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(ROOT / "matrix")


def test_missing_data_is_one_line_naming_both_places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_data, "_HERE", tmp_path / "pkg" / "_data")
    monkeypatch.setattr(_data, "_CHECKOUT", tmp_path)
    _data.locate.cache_clear()
    try:
        with pytest.raises(EnvironmentProblem) as caught:
            _data.locate(_data.MATRIX)
    finally:
        _data.locate.cache_clear()
    message = caught.value.message
    assert "\n" not in message
    assert str(tmp_path / "pkg" / "_data" / "matrix") in message and str(tmp_path / "matrix") in message
