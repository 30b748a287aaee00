"""`onnx-gate triage` at its edge: what it needs, and the one line it says when that is missing."""

from __future__ import annotations

from pathlib import Path

import onnxruntime
from click.testing import CliRunner

from ci_onnx.cli import cli
from tests import bundles


def test_without_a_failing_result_or_a_check_it_says_what_to_do(tmp_path: Path) -> None:
    bundle = bundles.mlp_bundle(tmp_path / "op17-onnx")
    target = f"ort{onnxruntime.__version__}-cpu-op17-onnx"
    res = CliRunner().invoke(
        cli, ["triage", "--bundle", str(bundle), "--target", target, "--out", str(tmp_path)]
    )
    assert res.exit_code == 2, res.output
    assert "no failing parity or decision check to triage" in res.output and "--check" in res.output


def test_a_check_that_is_not_parity_or_decision_is_a_usage_error(tmp_path: Path) -> None:
    bundle = bundles.mlp_bundle(tmp_path / "op17-onnx")
    target = f"ort{onnxruntime.__version__}-cpu-op17-onnx"
    args = [
        "triage",
        "--bundle",
        str(bundle),
        "--target",
        target,
        "--out",
        str(tmp_path),
        "--check",
        "fallback",
    ]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 2 and "--check 'fallback'" in res.output, res.output


def test_a_passing_check_named_on_demand_stops_saying_it_did_not_reproduce(tmp_path: Path) -> None:
    bundle = bundles.mlp_bundle(tmp_path / "op17-onnx")  # its references are onnxruntime's own
    target = f"ort{onnxruntime.__version__}-cpu-op17-onnx"
    args = [
        "triage",
        "--bundle",
        str(bundle),
        "--target",
        target,
        "--out",
        str(tmp_path),
        "--check",
        "parity[logits]",
    ]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 1, res.output  # it stopped short: no fault class
    assert "triage stopped: the failure did not reproduce" in res.output
    assert (tmp_path / "triage" / target / "triage.json").is_file()
