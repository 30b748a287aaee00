"""The cold start's fresh process (ci_onnx.observer.serve_once), run for real on a tiny model."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from ci_onnx.observer import coldstart


def _relu(path: Path) -> Path:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_a_fresh_process_answers_and_is_timed_to_its_first_answer(tmp_path: Path) -> None:
    model = _relu(tmp_path / "model.onnx")
    np.savez(tmp_path / "feeds.npz", i0=np.ones((1, 4), np.float32))
    timed = coldstart.cold_start(model, ["CPUExecutionProvider"], tmp_path / "feeds.npz", ["x"])
    assert len(timed["warm_ms"]) == coldstart.WARM_RUNS
    parts = timed["import_ms"] + timed["session_ms"] + timed["first_run_ms"]
    assert 0 < parts < timed["cold_start_ms"]  # the interpreter's own start is in the figure too


def test_the_fresh_process_imports_nothing_of_the_package_before_its_clock(tmp_path: Path) -> None:
    """Started as a script: what it imports before ``import numpy`` is the standard library only."""
    model = _relu(tmp_path / "model.onnx")
    np.savez(tmp_path / "feeds.npz", i0=np.ones((1, 4), np.float32))
    spec = (
        f'{{"model": "{model}", "providers": ["CPUExecutionProvider"], '
        f'"feeds": "{tmp_path / "feeds.npz"}", "names": ["x"], "runs": 1}}'
    )
    done = subprocess.run(
        [sys.executable, "-X", "importtime", str(coldstart.SERVE_ONCE), spec],
        capture_output=True,
        text=True,
        check=True,
    )
    imported = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line]
    before = imported[: imported.index("numpy")] if "numpy" in imported else imported
    assert "numpy" in imported
    assert not [m for m in before if m.startswith(("ci_onnx", "argparse", "subprocess"))], before


def test_a_fresh_process_that_fails_is_unmeasurable_with_its_last_line(tmp_path: Path) -> None:
    np.savez(tmp_path / "feeds.npz", i0=np.ones((1, 4), np.float32))
    missing = tmp_path / "no-such-model.onnx"
    with pytest.raises(coldstart.Unmeasurable) as err:
        coldstart.cold_start(missing, ["CPUExecutionProvider"], tmp_path / "feeds.npz", ["x"])
    assert "the fresh process failed (exit 1)" in str(err.value)
    assert "\n" not in str(err.value)
