"""`onnx-gate run` twice on an unchanged model: the second exports nothing, says so, and still serves
the same verdict with the serving figures (cold start in a fresh process) in the result and report."""

from __future__ import annotations

import json
import secrets
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from ci_onnx.cli import cli
from tests.conftest import EXAMPLE_CONFIG

pytestmark = pytest.mark.e2e

TARGET = "ort1.20.1-cpu-op17-dynamo"
CONFIG = """\
version: 1
model:
  name: digitnet
  factory: model.py:build
  inputs: {image: {shape: [batch, 1, 8, 8]}}
  outputs: [logits]
  dynamic_axes: {image: {0: batch}, logits: {0: batch}}
  samples: samples.npz
export: {opsets: [17], exporters: [dynamo]}
verify: {random_inputs: 8, decision: {output: logits}, batch_sizes: [1, 8], latency_runs: 5}
targets: {runtimes: ["1.20.1"], providers: [cpu]}
budgets: {cold_start_ms: 60000, p99_ms: 1000}
"""


def run(config: Path, out: Path, cache: Path, *extra: str) -> tuple[int, str]:
    args = ["run", "--config", str(config), "--out", str(out), "--cache-dir", str(cache), "--jobs", "1"]
    result = CliRunner().invoke(cli, [*args, *extra])
    return result.exit_code, result.output


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The example's model, weights and samples in a directory of their own; a fresh comment in the
    factory gives this test its own cache key, so no earlier session's entry is found."""
    root = tmp_path / "model"
    root.mkdir()
    for name in ("model.py", "weights.pt", "samples.npz"):
        shutil.copy(EXAMPLE_CONFIG.parent / name, root / name)
    with (root / "model.py").open("a") as f:
        f.write(f"\n# {secrets.token_hex(8)}\n")
    (root / "onnx-gate.yml").write_text(CONFIG)
    return root


def test_a_second_run_exports_nothing_and_the_result_has_its_cold_start(
    project: Path, tmp_path: Path, env_cache: Path
) -> None:
    config = project / "onnx-gate.yml"
    code, first = run(config, project / "out1", env_cache)  # --out inside the model's directory
    assert code == 0, first
    assert "op17-dynamo: exporting…" in first and "reused from cache" not in first

    code, second = run(config, project / "out2", env_cache)
    assert code == 0, second
    assert "op17-dynamo: reused from cache" in second and "exporting…" not in second
    assert "nothing exported: every bundle came from the cache" in second
    assert "; 1 bundle(s) reused from the export cache" in second

    a = json.loads((project / "out1" / "results" / f"{TARGET}.json").read_text())
    b = json.loads((project / "out2" / "results" / f"{TARGET}.json").read_text())
    assert a["bundle"] == b["bundle"] and a["status"] == b["status"] == "passed"
    export = next(c for c in b["checks"] if c["name"] == "export")
    assert export["figures"]["cache"] == "reused" and "reused from cache" in export["message"]

    serving = b["observation"]["serving"]
    assert serving["cold_start_ms"] > serving["import_ms"] > 0, serving
    assert serving["first_run_ms"] > 0 and serving["warm_runs"] == 10 and serving["batch_size"] == 1
    assert serving["runtime_package"] == "onnxruntime"
    model = (project / "out2" / "bundles" / "op17-dynamo" / "model.onnx").stat().st_size
    assert serving["model_bytes"] == model
    assert serving["env_bytes"] == serving["runtime_bytes"] + serving["numpy_bytes"] + model
    checks = {c["name"]: c["status"] for c in b["checks"]}
    assert checks["cold-start"] == "passed"
    assert checks["budget[cold_start_ms]"] == checks["budget[p99_ms]"] == "passed"

    report = (project / "out2" / "report.md").read_text()
    assert "### Serving: cold start in a fresh process" in report and f"| `{TARGET}` |" in report
    assert "Reused from the export cache" in report and "op17-dynamo (cache key" in report
    assert "cold start ms" in second  # the terminal table's column

    with (project / "model.py").open("a") as f:
        f.write("# edited\n")
    code, third = run(config, project / "out3", env_cache)
    assert code == 0 and "op17-dynamo: exporting…" in third and "reused from cache" not in third

    code, forced = run(config, project / "out4", env_cache, "--no-cache")
    assert code == 0 and "export cache: off" in forced and "exporting…" in forced


def test_a_budget_over_fails_the_cell_and_says_by_how_much(
    project: Path, tmp_path: Path, env_cache: Path
) -> None:
    config = project / "onnx-gate.yml"
    config.write_text(CONFIG.replace("cold_start_ms: 60000", "cold_start_ms: 0.001"))
    code, output = run(config, tmp_path / "out", env_cache)
    assert code != 0, output
    result = json.loads((tmp_path / "out" / "results" / f"{TARGET}.json").read_text())
    assert result["status"] == "failed"
    assert result["summary"].startswith("budget[cold_start_ms]: cold start "), result["summary"]
    assert "over budgets.cold_start_ms (0.001 ms)" in result["summary"]
