"""The command line: fast start-up without torch or onnxruntime, exit codes, help."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from ci_onnx.cli import cli
from tests.conftest import EXAMPLE_CONFIG

HEAVY = re.compile(r"\|\s+(torch|onnxruntime|onnx|onnxscript|numpy)(\.|$)", re.MULTILINE)


def test_importing_the_cli_imports_no_heavy_package() -> None:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import ci_onnx, ci_onnx.cli"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "ci_onnx.cli" in done.stderr
    assert not HEAVY.findall(done.stderr), HEAVY.findall(done.stderr)


def test_help_lists_every_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ci_onnx", "--help"], capture_output=True, text=True, check=True
    )
    for command in ("plan", "export", "verify", "report", "run", "init"):
        assert re.search(rf"^\s+{command}\s", done.stdout, re.MULTILINE), command


def test_plan_github_format_writes_the_step_outputs(tmp_path: Path) -> None:
    config = tmp_path / "onnx-gate.yml"
    text = EXAMPLE_CONFIG.read_text().replace(
        'runtimes: ["1.20.1", latest]', 'runtimes: ["1.20.1", "1.24.1"]'
    )
    config.write_text(
        text.replace("factory: model.py:build", f"factory: {EXAMPLE_CONFIG.parent}/model.py:build")
    )
    output = tmp_path / "github_output"
    result = CliRunner().invoke(
        cli,
        ["plan", "--config", str(config), "--format", "github", "--out", str(tmp_path / "plan.json")],
        env={"GITHUB_OUTPUT": str(output)},
    )
    assert result.exit_code == 0, result.output
    assert "to $GITHUB_OUTPUT (12 targets in 3 verify job(s))" in result.output
    matrix = output.read_text().split("matrix<<ghadelim_onnx_gate\n")[1].split("\n")[0]
    entries = json.loads(matrix)["include"]
    assert [e["name"] for e in entries] == [
        "verify ort1.20.1 cpu · 4 targets",
        "verify ort1.24.1 cpu · 4 targets",
        "verify ort1.24.1 openvino · 4 targets",
    ]
    ids = [i for e in entries for i in e["targets"]]
    assert ids[0] == "ort1.20.1-cpu-op17-dynamo" and len(ids) == 12
    assert json.loads((tmp_path / "plan.json").read_text())["model"] == "digitnet"


def test_unknown_only_glob_is_a_usage_error() -> None:
    result = CliRunner().invoke(cli, ["plan", "--config", str(EXAMPLE_CONFIG), "--only", "ort9.*"])
    assert result.exit_code == 2
    assert "onnx-gate: error: --only 'ort9.*' matches no target" in result.output


def test_help_lists_every_exit_code_the_cli_uses() -> None:
    from ci_onnx.cli import EXIT_CODES
    from ci_onnx.contracts import errors

    declared = {v for k, v in vars(errors).items() if k.startswith("EXIT_")}
    assert {code for code, _ in EXIT_CODES} == declared
    shown = CliRunner().invoke(cli, ["--help"]).output
    assert "Exit codes:" in shown
    for code, meaning in EXIT_CODES:
        assert f"{code:<4} {meaning}" in shown
