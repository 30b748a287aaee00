"""Verdict truth for models that keep state between calls: each exported by the gate, each judged by
``stateful`` on evidence (a later call on the same inputs, from the same state) and nothing excused by
the model's own drift. The models are tests/e2e/pitfalls/state.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from export_helpers import export_factory, failed

from ci_onnx.contracts.bundle import Manifest
from ci_onnx.contracts.target import Status

pytestmark = pytest.mark.e2e

STATE = Path(__file__).parent / "pitfalls" / "state.py"

ROWS = """\
  inputs: {x: {shape: [batch, 8]}}
  outputs: [y]
  dynamic_axes: {x: {0: batch}, y: {0: batch}}"""


def _export(tmp_path: Path, factory: str, exporter: str) -> Manifest:
    return export_factory(tmp_path, f"{STATE}:{factory}", ROWS, exporter)


def _finding(m: Manifest, name: str) -> object:
    return next(f for f in m.findings if f.name == name)


@pytest.mark.parametrize(
    ("factory", "exporter", "named"),
    [
        ("tempered", "torchscript", "buffer 'calls'"),
        ("normaliser", "torchscript", "buffer 'mean'"),
        ("prompted", "torchscript", "attribute 'encoder.context'"),
    ],
)
def test_state_that_reaches_the_outputs_fails_stateful_naming_it(
    tmp_path: Path, factory: str, exporter: str, named: str
) -> None:
    m = _export(tmp_path, factory, exporter)
    fails = failed(m)
    assert "stateful" in fails, fails
    assert named in fails["stateful"] and "call 2" in fails["stateful"]
    # the references, probes and float64 self-check start from one state: nothing else is excused
    # or convicted by the model's own drift
    axes = _finding(m, "dynamic-axes")
    assert axes.status is Status.PASSED, axes.message  # type: ignore[attr-defined]
    assert "ill-conditioned" not in str(axes.figures)  # type: ignore[attr-defined]


def test_noise_in_eval_is_torch_disagreeing_with_itself(tmp_path: Path) -> None:
    fails = failed(_export(tmp_path, "jittered", "torchscript"))
    assert "torch disagrees with itself" in fails["stateful"]


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_state_that_never_reaches_the_outputs_passes_with_a_warning(tmp_path: Path, exporter: str) -> None:
    m = _export(tmp_path, "audited", exporter)
    assert failed(m) == {}
    check = _finding(m, "stateful")
    warnings = " ".join(check.warnings)  # type: ignore[attr-defined]
    assert "attribute 'calls'" in warnings and "attribute 'log'" in warnings
