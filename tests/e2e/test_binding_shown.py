"""An input bound by position to a parameter of another name is said on the terminal and in
report.md, with a warning; it was in the JSON and JUnit only."""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path

import pytest
from click.testing import CliRunner

from ci_onnx.cli import cli

pytestmark = pytest.mark.e2e

MODEL = """\
import torch


class Scale(torch.nn.Module):
    def forward(self, x):
        return x * 2.0


def build():
    return Scale()
"""

CONFIG = """\
version: 1
model:
  factory: net.py:build
  inputs: {{image: {{shape: [batch, 4]}}}}
  outputs: [y]
  dynamic_axes: {{image: {{0: batch}}, y: {{0: batch}}}}
export: {{opsets: [17], exporters: [dynamo]}}
verify: {{random_inputs: 4, batch_sizes: [1], latency_runs: 2, serving_figures: false}}
targets: {{runtimes: ["{runtime}"], providers: [cpu]}}
"""


def test_an_input_bound_by_position_is_shown_and_warned_on_the_terminal_and_in_the_report(
    tmp_path: Path, env_cache: Path
) -> None:
    (tmp_path / "net.py").write_text(MODEL)
    config = tmp_path / "onnx-gate.yml"
    config.write_text(CONFIG.format(runtime=version("onnxruntime")))
    out = tmp_path / "out"
    result = CliRunner().invoke(
        cli, ["run", "--config", str(config), "--out", str(out), "--cache-dir", str(env_cache), "--no-cache"]
    )
    assert result.exit_code == 0, result.output
    said = result.output
    assert "op17-dynamo: inputs bound as forward(x=image)" in said
    assert (
        "op17-dynamo: warning: model.inputs.image is passed by position as forward's parameter 'x' "
        "(no parameter is named 'image')"
    ) in said
    report = (out / "report.md").read_text()
    assert (
        "_Inputs bound by position (model.inputs named unlike forward's parameters): `op17-dynamo`: "
        in report
    )
    assert "inputs bound as forward(x=image); ⚠️ model.inputs.image is passed by position" in report
