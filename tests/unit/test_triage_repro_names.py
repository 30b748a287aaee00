"""A reproduction carries names as data: a node or value named with a backslash escape, quotes or a
newline still gives a script that runs and says whether the divergence reproduces (such a name made
reproduce.py a SyntaxError, reported as "does not reproduce")."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ci_onnx.triage import graph, repro

NAMES = ["a\\Nb", 'q"""x\\x', "line\nbreak", "tab\t'quote'"]


@pytest.mark.parametrize("name", NAMES)
def test_a_reproduction_of_a_node_with_any_name_runs(tmp_path: Path, name: str) -> None:
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info(name, TensorProto.FLOAT, [2])
    node = helper.make_node("Relu", ["x"], [name], name=name)
    model = helper.make_model(
        helper.make_graph([node], "g", [x], [y]), opset_imports=[helper.make_opsetid("", 17)]
    )
    model.ir_version = 8
    onnx.checker.check_model(model)
    values = {"x": np.array([1.0, -1.0], np.float32)}
    expected = {name: np.array([5.0, 0.0], np.float32)}  # not what Relu gives: it reproduces
    settings = repro.settings_of({}, ["CPUExecutionProvider"], "1.32.0")
    repro.write(
        model, graph.of(model), ["x"], [name], values, expected, tmp_path, settings,
        atol=1e-6, rtol=1e-6, what=f"{name} (Relu) diverges", expected_from=f"PyTorch's {name}",
    )  # fmt: skip
    done = subprocess.run(
        [sys.executable, str(tmp_path / "reproduce.py")], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "the divergence REPRODUCES" in done.stdout
