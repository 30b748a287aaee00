"""The nightly's specs resolved through pip against indexes on loopback, and shown in the plan."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from ci_onnx.cli import cli
from ci_onnx.nightly.families import FamilyKey
from ci_onnx.plan import read_plan
from tests.conftest import EXAMPLE_CONFIG
from tests.support import pypi

FINALS = ["1.30.0", "1.31.1", "1.32.0"]
PRE = "1.33.0.dev20261128001"


def _invoke(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runtimes: str, *args: str) -> Result:
    """``onnx-gate ARGS --config C`` with the example's runtimes set to ``runtimes`` (on the cpu),
    resolved against a loopback index of the final releases and a nightly index of PRE."""
    for key in [k for k in os.environ if k.startswith("PIP_")]:
        monkeypatch.delenv(key)
    shutil.copytree(EXAMPLE_CONFIG.parent, tmp_path / "ex")
    config = tmp_path / "ex" / "onnx-gate.yml"
    finals = {"onnxruntime": [pypi.wheel_name("onnxruntime", v) for v in FINALS]}
    nightlies = {"onnxruntime": [pypi.wheel_name("onnxruntime", PRE)]}
    with pypi.serve(finals) as index_url, pypi.serve(nightlies) as nightly_url:
        text = config.read_text().replace(
            'runtimes: ["1.20.1", latest]', f'runtimes: {runtimes}\n  nightly_index: "{nightly_url}"'
        )
        config.write_text(text.replace("providers: [cpu, openvino]", "providers: [cpu]"))
        env = {**pypi.pip_env(index_url), "PIP_INDEX_URL": index_url}
        command = [args[0], "--config", str(config), *args[1:]]
        return CliRunner().invoke(cli, command, env=env, catch_exceptions=False)


def test_latest_n_and_nightly_are_resolved_shown_and_kept_as_families(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan_file = str(tmp_path / "plan.json")
    result = _invoke(
        tmp_path, monkeypatch, "[latest-2, nightly]", "plan", "--only", "*-op17-dynamo", "--out", plan_file
    )
    assert result.exit_code == 0, result.output
    assert "latest-2 → 1.32.0" in result.output and "latest-2 → 1.31.1" in result.output
    assert f"nightly → {PRE}" in result.output  # only the extra index serves it
    assert "1.30.0" not in result.output
    targets = read_plan(tmp_path / "plan.json").targets
    assert sorted({FamilyKey.of(t).id for t in targets}) == [
        "cpu-op17-dynamo@latest-2",
        "cpu-op17-dynamo@nightly",
    ]
    assert json.loads((tmp_path / "plan.json").read_text())["targets"][0]["runtime_spec"] == "latest-2"


def test_export_only_resolves_the_nightly_spec_through_the_configs_nightly_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``export --only`` selects bundles through the plan's target ids: its package index must be
    the one plan and run build (with targets.nightly_index), or ``nightly`` resolves to nothing."""
    exported: list[list[str]] = []

    def export_all(
        cfg: object, jobs: list[object], out: Path, log: object, parallel: int = 0
    ) -> list[object]:
        exported.append([j.key for j in jobs])  # type: ignore[attr-defined]
        return []

    monkeypatch.setattr("ci_onnx.export.parent.export_all", export_all)
    only = f"ort{PRE}-cpu-op17-dynamo"
    result = _invoke(
        tmp_path, monkeypatch, "[nightly]", "export", "--only", only, "--out", str(tmp_path / "b")
    )
    assert result.exit_code == 0, result.output
    assert exported == [["op17-dynamo"]]
