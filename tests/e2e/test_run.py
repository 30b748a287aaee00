"""`onnx-gate run` on the example CNN across real onnxruntime releases and onnxruntime-openvino."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from ci_onnx.cli import cli
from tests.conftest import DIGITNET_MODEL

pytestmark = pytest.mark.e2e

CONFIG = f"""\
version: 1
{DIGITNET_MODEL}export: {{opsets: [17, 21], exporters: [dynamo, torchscript]}}
verify:
  random_inputs: 8
  decision: {{output: logits}}
  batch_sizes: [1, 8]
  latency_runs: 5
targets:
  runtimes: ["1.17.3", "1.20.1", "1.32.0"]
  providers: [cpu]
  include:
    - {{runtime: "1.24.1", provider: openvino, opset: 17, exporter: dynamo}}
    - {{runtime: "1.24.1", provider: openvino, opset: 21, exporter: dynamo}}
"""


def run(config: Path, out: Path, cache: Path, *only: str) -> tuple[int, str]:
    args = ["run", "--config", str(config), "--out", str(out), "--cache-dir", str(cache), "--jobs", "2"]
    for pattern in only:
        args += ["--only", pattern]
    result = CliRunner().invoke(cli, args)
    return result.exit_code, result.output


def test_matrix_of_real_runtimes_with_expected_skips_an_error_and_the_openvino_fallback(
    tmp_path: Path, env_cache: Path
) -> None:
    config = tmp_path / "onnx-gate.yml"
    config.write_text(CONFIG)
    out = tmp_path / "out"
    code, output = run(config, out, env_cache)

    statuses = {p.stem: json.loads(p.read_text())["status"] for p in (out / "results").glob("*.json")}
    passed = {
        f"ort{runtime}-cpu-op{opset}-{exporter}"
        for runtime in ("1.20.1", "1.32.0")
        for opset in (17, 21)
        for exporter in ("dynamo", "torchscript")
    } | {"ort1.17.3-cpu-op17-torchscript", "ort1.24.1-openvino-op17-dynamo", "ort1.24.1-openvino-op21-dynamo"}
    assert statuses == {
        **dict.fromkeys(passed, "passed"),
        # dynamo writes IR 10, which onnxruntime 1.17 cannot load: known once the bundle exists
        "ort1.17.3-cpu-op17-dynamo": "expected",
    }, output
    # planned expected skips are not run at all
    assert not (out / "results" / "ort1.17.3-cpu-op21-dynamo.json").exists()
    assert code == 0, (
        output
    )  # a release the index lacks is refused at plan time: tests/unit/test_plan_releases.py

    report = (out / "report.md").read_text()
    assert "ort1.17.3-cpu-op21-dynamo" in report
    assert "onnxruntime 1.17 loads opset ≤ 20; opset 21 needs onnxruntime ≥ 1.18" in report  # no entities
    fallback = report.split("### CPU fallback", 1)[1].split("###", 1)[0]
    assert re.search(r"`ort1\.24\.1-openvino-op17-dynamo` \| openvino \| \d+ \| \d+ \|", fallback), fallback
    assert "loads IR version ≤ 9; the exported file has IR 10" in report

    again, second = run(config, tmp_path / "again", env_cache, "ort1.20.1-*")
    assert again == 0, second
    assert "0 environment(s) created" in second


def test_the_demo_matrix_exports_the_opsets_it_plans_not_the_files(
    tmp_path: Path, env_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.metadata

    installed = importlib.metadata.version("onnxruntime")
    monkeypatch.chdir(tmp_path)  # no onnx-gate.yml here: the bundled example with the demo matrix
    code, output = run_default(tmp_path / "out", env_cache, f"ort{installed}-cpu-op21-torchscript")
    assert code == 0, output
    assert "running the bundled example" in output
    manifest = json.loads((tmp_path / "out" / "bundles" / "op21-torchscript" / "manifest.json").read_text())
    assert manifest["opset"] == 21  # the example's own file asks for 17 and 18


def run_default(out: Path, cache: Path, only: str) -> tuple[int, str]:
    args = ["run", "--out", str(out), "--cache-dir", str(cache), "--only", only]
    result = CliRunner().invoke(cli, args)
    return result.exit_code, result.output
