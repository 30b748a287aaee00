"""The record of what an export read: where each file is keyed, and what a check calls a change."""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ci_onnx.export import record
from tests.reuse import layouts

RECORD_A_FACTORY = """\
import json, sys
from pathlib import Path
from ci_onnx.export import factory, record
root = Path(sys.argv[1])
recorder = record.Recorder().start()
factory.load_callable(sys.argv[2], root)()
print(json.dumps(recorder.record(root).to_json()))
"""
NO_TORCH = {
    "export/model.py": layouts.SUBDIR_FACTORY,
    "src/mylib/__init__.py": "",
    "src/mylib/layers.py": "import configparser\n\n\ndef Block():\n    return configparser.ConfigParser()\n",
    "src/mylib/unused.py": "X = 1\n",
    "settings/behaviour.ini": "[model]\nscale = 1\n",
    "README.md": "not read\n",
    **layouts.fake_distribution("1.0"),
}


def recorded(repo: Path, spec: str) -> record.Record:
    """What loading and calling ``spec`` reads, recorded in a fresh interpreter as the export child does."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(repo / layouts.ENV), os.getcwd()])}
    done = subprocess.run(
        [sys.executable, "-c", RECORD_A_FACTORY, str(repo), spec], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    read = record.Record.from_json(json.loads(done.stdout))
    assert read is not None
    return read


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    files = dict(NO_TORCH)
    files["export/model.py"] = files["export/model.py"].replace(
        "def build():\n    return Block()\n",
        "import fakedep\n\n\ndef build():\n"
        "    (Path(__file__).parents[1] / 'settings' / 'behaviour.ini').read_text()\n    return Block()\n",
    )
    layouts.write(tmp_path, files)
    (tmp_path / ".git").mkdir()
    return tmp_path


def test_the_repository_s_files_are_hashed_the_environment_s_keyed_by_version(repo: Path) -> None:
    read = recorded(repo, "export/model.py:build")
    assert sorted(read.files) == [
        "export/model.py",
        "settings/behaviour.ini",
        "src/mylib/__init__.py",
        "src/mylib/layers.py",
    ], read.files
    assert read.distributions.get("fakedep") == "1.0"
    assert not any("configparser" in f or f.startswith("/") for f in read.files), "the stdlib is Python's"
    assert read.python == sys.version.split()[0]


def test_a_check_names_each_change_and_fails_closed(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    read = recorded(repo, "export/model.py:build")
    assert record.changes(read, repo) == ["fakedep 1.0 is not installed here"], "what cannot be checked"
    monkeypatch.syspath_prepend(str(repo / layouts.ENV))  # the environment the export ran in
    importlib.invalidate_caches()
    assert record.changes(read, repo) == []
    (repo / "README.md").write_text("edited: not read")
    (repo / "src/mylib/unused.py").write_text("edited: not imported")
    assert record.changes(read, repo) == []
    (repo / "src/mylib/layers.py").write_text("edited")
    (repo / "settings/behaviour.ini").unlink()
    assert record.changes(read, repo) == ["settings/behaviour.ini is gone", "src/mylib/layers.py changed"]
    assert record.summary(record.changes(read, repo)) == "settings/behaviour.ini is gone (and 1 more)"
    layouts.bump(repo, "1.1")
    importlib.invalidate_caches()
    assert "fakedep 1.0 → 1.1" in record.changes(read, repo)
    older = dataclasses.replace(read, files={}, distributions={"no-such-distribution-x": "1.0"}, python="2.7")
    assert record.changes(older, repo) == [
        f"Python 2.7 → {sys.version.split()[0]}",
        "no-such-distribution-x 1.0 is not installed here",
    ]


def test_what_is_not_a_record_is_none() -> None:
    assert record.Record.from_json(None) is None
    assert record.Record.from_json({"files": [], "distributions": {}, "python": "3"}) is None
    assert record.of_findings([]) is None


def test_external_data_is_named_by_the_model_s_entries(tmp_path: Path) -> None:
    layouts.write(tmp_path, layouts.external_data_model())
    assert record.external_data(tmp_path / "model.onnx") == [tmp_path / "model.onnx_data"]


def test_an_export_that_reached_the_network_is_never_reused(tmp_path: Path) -> None:
    script = """\
import json, socket
from pathlib import Path
from ci_onnx.export import record
server = socket.create_server(("127.0.0.1", 0))
recorder = record.Recorder().start()
socket.create_connection(server.getsockname()).close()  # a factory downloading its weights
print(json.dumps(recorder.record(Path.cwd()).to_json()))
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    read = record.Record.from_json(json.loads(done.stdout))
    assert read is not None and read.network and read.network[0].startswith("127.0.0.1:")
    assert record.changes(read, tmp_path)[0].startswith("its export reached the network (127.0.0.1:")
