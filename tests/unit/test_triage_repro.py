"""The reproduction script carries names as data: a node or value name of any text (``\\N``, ``\\x``,
quotes, newlines) leaves reproduce.py valid Python that reproduces the divergence."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from ci_onnx.triage import graph, repro

NAMES = [
    "\\N{oops}",
    "a\\x4 b",
    "it's \"quoted\" '''",
    'ends with a quote"',
    "two\nlines\r\n{braces}",
    "back\\",
]


def model(name: str) -> onnx.ModelProto:
    two = numpy_helper.from_array(np.array(2.0, np.float32), "two")
    g = helper.make_graph(
        [
            helper.make_node("Relu", ["x"], [name], name=f"relu {name}"),
            helper.make_node("Mul", [name, "two"], ["y"], name=name),
        ],
        "names",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
        [two],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


@pytest.mark.parametrize("name", NAMES)
def test_any_name_makes_a_script_that_runs_and_reproduces(tmp_path: Path, name: str) -> None:
    import onnxruntime

    m = model(name)
    value = np.arange(4, dtype=np.float32)
    what = f"Mul {name!s} diverges after {name}"
    settings = repro.settings_of({}, ["CPUExecutionProvider"], onnxruntime.__version__)
    repro.write(
        m, graph.of(m), [name], ["y"], {name: value}, {"y": value * 3}, tmp_path, settings,
        atol=1e-5, rtol=1e-5, what=what, expected_from=f"PyTorch's {name}",
    )  # fmt: skip
    script = tmp_path / repro.SCRIPT
    compile(script.read_text(), str(script), "exec")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, timeout=120)
    assert done.returncode == 1 and repro.MARK.encode() in done.stdout, done.stdout + done.stderr
    assert what.encode() in done.stdout, "the name is printed as it is, not mangled"
