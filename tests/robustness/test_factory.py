"""The model factory is code from the pull request: it sees no token, and a factory that exits says so."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ci_onnx import config
from ci_onnx.contracts.errors import ConfigError
from ci_onnx.export import factory, parent
from tests.robustness import corpus
from tests.robustness.test_corpus import PLANTED, TOKEN_NAMES


@pytest.mark.parametrize("code", ["2", "0", "'bye'", ""])
def test_a_factory_module_that_exits_at_import_is_a_config_error(tmp_path: Path, code: str) -> None:
    (tmp_path / "net.py").write_text(f"import sys\nsys.exit({code})\n")
    with pytest.raises(ConfigError, match=r"model.factory: importing net.py called sys.exit\(.*\)"):
        factory.load_callable("net.py:build", tmp_path)


def test_a_factory_module_that_raises_gives_its_first_line(tmp_path: Path) -> None:
    (tmp_path / "net.py").write_text("raise RuntimeError('no weights here\\nsecond line')\n")
    with pytest.raises(ConfigError, match=r"raised RuntimeError: no weights here$"):
        factory.load_callable("net.py:build", tmp_path)


@pytest.mark.e2e
def test_the_export_child_sees_no_token_and_an_exit_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`onnx-gate export` (and `run`, which exports the same way) with every token name set."""
    for name in TOKEN_NAMES:
        monkeypatch.setenv(name, PLANTED)
    dump = tmp_path / "factory-env.txt"
    (tmp_path / "net.py").write_text(
        f"import os, sys\nopen({str(dump)!r}, 'w').write(repr(dict(os.environ)))\n"
        "def build():\n    sys.exit(2)\n"
    )
    (tmp_path / corpus.CONFIG).write_bytes(corpus._yaml(corpus.BASE))
    cfg = config.load(tmp_path / corpus.CONFIG)
    job = parent.candidates(cfg, 0)[0]
    with pytest.raises(ConfigError, match=r"model.factory: net.py:build called sys.exit\(2\)"):
        parent.export_one(cfg, job, tmp_path / "bundle")
    seen = dump.read_text()
    assert PLANTED not in seen and "PATH" in seen
    assert os.environ["GITHUB_TOKEN"] == PLANTED  # this process keeps its own environment
