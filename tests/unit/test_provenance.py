"""The build that made a bundle: onnx-gate's version and a digest of its files, so evidence made by
other onnx-gate code (a checkout of main, a branch: all "1.0.0") is never reused for this one."""

from __future__ import annotations

from pathlib import Path

import pytest

import ci_onnx
from ci_onnx.contracts import provenance


def _tree(root: Path) -> Path:
    (root / "export").mkdir(parents=True)
    (root / "export" / "checks.py").write_text("LIMIT = 1\n")
    (root / "observe.c").write_text("int main(void) { return 0; }\n")
    return root


def test_the_digest_follows_every_byte_and_name_and_nothing_else(tmp_path: Path) -> None:
    root = _tree(tmp_path / "a")
    before = provenance.files_digest(root)
    assert provenance.files_digest(_tree(tmp_path / "b")) == before  # the same files elsewhere
    (root / "__pycache__").mkdir()
    (root / "__pycache__" / "checks.cpython-311.pyc").write_bytes(b"\x00")
    (root / "node_modules" / "x").mkdir(parents=True)
    (root / "node_modules" / "x" / "index.js").write_text("1")
    assert provenance.files_digest(root) == before  # bytecode and npm installs are no part of it
    (root / "export" / "checks.py").write_text("LIMIT = 2\n")
    assert provenance.files_digest(root) != before
    (root / "export" / "checks.py").write_text("LIMIT = 1\n")
    (root / "export" / "checks.py").rename(root / "export" / "other.py")
    assert provenance.files_digest(root) != before


def test_the_build_id_is_the_version_and_a_digest_of_the_package_and_its_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ci_onnx import _data

    version, digest = provenance.build_id().split("+")
    assert version == ci_onnx.__version__ and len(digest) == 12
    provenance.build_id.cache_clear()
    monkeypatch.setattr(_data, "locate", lambda name: _tree(tmp_path / name))  # other declared data
    try:
        assert provenance.build_id() != f"{version}+{digest}"
    finally:
        provenance.build_id.cache_clear()


def test_the_export_cache_key_changes_with_the_build(monkeypatch: pytest.MonkeyPatch) -> None:
    from ci_onnx import config
    from ci_onnx.export import cache_key
    from ci_onnx.export.parent import Job
    from tests.conftest import EXAMPLE_CONFIG

    cfg = config.load(EXAMPLE_CONFIG)
    job = Job(17, "dynamo")
    first = cache_key.key_for(cfg, job)
    assert first.material["onnx-gate"] == provenance.build_id()
    monkeypatch.setattr(cache_key, "build_id", lambda: f"{ci_onnx.__version__}+000000000000")
    assert cache_key.key_for(cfg, job).digest != first.digest  # same version, other code
