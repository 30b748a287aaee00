"""The reproduce command in a result and its JUnit works as printed, for a release other than the
one installed beside onnx-gate (it said `onnx-gate verify --bundle … --target …`, which then asked
for --python of an environment holding that release)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from ci_onnx.cli import cli
from tests.conftest import DIGITNET_MODEL

pytestmark = pytest.mark.e2e

RELEASE = "1.20.1"
"""Not the onnxruntime installed beside onnx-gate (1.32.0): its environment is made or cached."""
TARGET = f"ort{RELEASE}-cpu-op17-dynamo"

CONFIG = f"""\
version: 1
{DIGITNET_MODEL}export: {{opsets: [17], exporters: [dynamo]}}
verify: {{random_inputs: 4, batch_sizes: [1, 2], latency_runs: 3, serving_figures: false}}
targets: {{runtimes: ["{RELEASE}"], providers: [cpu]}}
"""


def _printed(out: Path) -> str:
    """The reproduce command of TARGET, the same in its result and in its JUnit."""
    result = json.loads((out / "results" / f"{TARGET}.json").read_text())
    junit = ET.parse(out / "junit" / f"{TARGET}.xml").getroot()
    props = {p.get("name"): p.get("value") for p in junit.iter("property")}
    assert result["status"] == "passed", result["summary"]
    assert props["reproduce"] == result["reproduce"]
    return str(result["reproduce"])


def _run_as_printed(command: str, cwd: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    argv = shlex.split(command)
    assert argv[0] == "onnx-gate", command
    argv[0] = str(Path(sys.executable).parent / "onnx-gate")  # the onnx-gate on a user's PATH
    env = {**os.environ, "ONNX_GATE_CACHE": str(cache)}  # the environments the run made are reused
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=900, check=False)


def test_the_reproduce_commands_of_run_and_of_verify_work_as_printed(tmp_path: Path, env_cache: Path) -> None:
    config = tmp_path / "onnx-gate.yml"
    config.write_text(CONFIG)
    out = tmp_path / "out"
    result = CliRunner().invoke(
        cli, ["run", "--config", str(config), "--out", str(out), "--cache-dir", str(env_cache)]
    )
    assert result.exit_code == 0, result.output

    # `onnx-gate run` knows the config: its cells say `onnx-gate run --config … --only …`
    printed = _printed(out)
    assert printed == f"onnx-gate run --config {config} --only {TARGET}"
    again = _run_as_printed(printed, tmp_path, env_cache)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert json.loads((tmp_path / "onnx-gate-out" / "results" / f"{TARGET}.json").read_text())["status"] == (
        "passed"
    )

    # `onnx-gate verify` of one cell (a CI job's command, here without --python): the bundle's
    verified = tmp_path / "verified"
    bundle = out / "bundles" / "op17-dynamo"
    done = _run_as_printed(
        f"onnx-gate verify --bundle {bundle} --target {TARGET} --out {verified}", tmp_path, env_cache
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    printed = _printed(verified)
    assert printed == f"onnx-gate verify --bundle {bundle} --target {TARGET}"
    again = _run_as_printed(printed, tmp_path, env_cache)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert f"{TARGET}: passed" in again.stdout
