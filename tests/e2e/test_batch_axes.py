"""Batch symbols off axis 0, judged through `onnx-gate run`: a time-major LSTM with its initial states
as inputs (the batch on axis 1 of every input and output) is exported with one size per symbol and
passes its batch checks split and stacked along axis 1; the same model leaking across the batch fails
them; scores ``[batch, batch]`` are compared whole, never sliced. The models are
tests/e2e/pitfalls/batch_axes.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ci_onnx.cli import cli

pytestmark = pytest.mark.e2e

MODELS = Path(__file__).parent / "pitfalls" / "batch_axes.py"
RUNTIME = "1.32.0"

LSTM = """\
  inputs:
    x: {shape: [time, batch, 6]}
    h0: {shape: [1, batch, 10]}
    c0: {shape: [1, batch, 10]}
  outputs: [y, hn]
  dynamic_axes: {x: {0: time, 1: batch}, h0: {1: batch}, c0: {1: batch}, y: {0: time, 1: batch}, hn: {1: batch}}
  dim_sizes: {time: 4}"""

SCORES = """\
  inputs: {x: {shape: [batch, 5]}}
  outputs: [scores, norm]
  dynamic_axes: {x: {0: batch}, scores: {0: batch, 1: batch}, norm: {0: batch}}"""


def _run(tmp_path: Path, env_cache: Path, factory: str, model: str) -> dict[str, dict[str, str]]:
    config = tmp_path / "onnx-gate.yml"
    config.write_text(
        f"version: 1\nmodel:\n  factory: {MODELS}:{factory}\n{model}\n"
        "export: {opsets: [18], exporters: [torchscript]}\n"
        "verify: {random_inputs: 4, batch_sizes: [1, 3]}\n"
        f'targets: {{runtimes: ["{RUNTIME}"], providers: [cpu]}}\n'
    )
    out = tmp_path / "out"
    args = ["run", "--config", str(config), "--out", str(out), "--cache-dir", str(env_cache)]
    done = CliRunner().invoke(cli, args)
    results = list((out / "results").glob("*.json"))
    assert len(results) == 1, done.output
    checks = json.loads(results[0].read_text())["checks"]
    return {c["name"]: {"status": c["status"], "message": c["message"]} for c in checks}


def test_a_time_major_lstm_with_its_states_as_inputs_passes_along_axis_1(
    tmp_path: Path, env_cache: Path
) -> None:
    checks = _run(tmp_path, env_cache, "time_major_lstm", LSTM)
    failing = {k: v for k, v in checks.items() if v["status"] not in ("passed", "skipped")}
    assert failing == {}, failing
    for n in (1, 3):
        assert checks[f"batch[{n}]"]["status"] == "passed", checks[f"batch[{n}]"]
        assert f"matches {n} single runs" in checks[f"batch[{n}]"]["message"]


def test_the_same_lstm_leaking_across_the_batch_fails_its_batch_check(
    tmp_path: Path, env_cache: Path
) -> None:
    checks = _run(tmp_path, env_cache, "leaky_across_batch", LSTM)
    assert checks["batch[3]"]["status"] == "failed", checks["batch[3]"]
    assert "batch 3 differs from 3 single runs: y" in checks["batch[3]"]["message"]
    assert checks["parity[y]"]["status"] == "passed"  # the export is right: the model itself leaks


def test_scores_with_the_batch_on_both_axes_are_compared_whole(tmp_path: Path, env_cache: Path) -> None:
    checks = _run(tmp_path, env_cache, "contrastive", SCORES)
    failing = {k: v for k, v in checks.items() if v["status"] not in ("passed", "skipped")}
    assert failing == {}, failing
    assert "not compared: scores (the batch on two axes)" in checks["batch[3]"]["message"]
    assert checks["parity[scores]"]["status"] == "passed"
