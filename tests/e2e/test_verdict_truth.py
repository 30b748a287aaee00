"""Verdict truth beyond the corpus: broken exports that raise no hint fail, healthy models that used to
look broken pass. Each case is a small model of tests/e2e/pitfalls/truth.py, exported by the gate."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest
from export_helpers import export_factory, failed
from onnx import numpy_helper

from ci_onnx.contracts.bundle import Manifest
from ci_onnx.export import inputs

pytestmark = pytest.mark.e2e

TRUTH = Path(__file__).parent / "pitfalls" / "truth.py"


def _export(tmp_path: Path, factory: str, model: str, exporter: str, opset: int = 18) -> Manifest:
    return export_factory(tmp_path, f"{TRUTH}:{factory}", model, exporter, opset)


def _finding(m: Manifest, name: str) -> object:
    return next(f for f in m.findings if f.name == name)


ROWS = """\
  inputs: {x: {shape: [batch, 8]}}
  outputs: [y]
  dynamic_axes: {x: {0: batch}, y: {0: batch}}"""


def test_an_in_place_edit_the_trace_loses_fails_naming_the_input(tmp_path: Path) -> None:
    m = _export(tmp_path, "scale_first_channels", ROWS, "torchscript")
    fails = failed(m)
    assert set(fails) == {"reference-parity"}, fails
    assert "changes input(s) 'x' in place" in fails["reference-parity"]
    # the bundle holds the inputs as drawn, not as the forward left them
    stored = numpy_helper.to_array(_load(tmp_path / "bundles" / "op18-torchscript", "input_0.pb"))
    drawn = inputs.random_inputs(m.inputs, 4, m.seed, {})["x"]
    np.testing.assert_array_equal(stored, drawn)


def _load(bundle: Path, name: str) -> object:
    from onnx import load_tensor

    return load_tensor(str(bundle / "test_data_set_0" / name))


@pytest.mark.parametrize(
    ("factory", "exporter"),
    [
        ("scale_first_channels", "dynamo"),
        ("zero_first_column", "torchscript"),
        ("zero_first_column", "dynamo"),
    ],
)
def test_an_in_place_edit_the_export_keeps_is_a_warning(tmp_path: Path, factory: str, exporter: str) -> None:
    m = _export(tmp_path, factory, ROWS, exporter)
    assert not failed(m), failed(m)
    parity = _finding(m, "reference-parity")
    assert any("changes input(s) 'x' in place" in w and "fresh copies" in w for w in parity.warnings)  # type: ignore[attr-defined]


def _two_outputs(declared: str) -> str:
    axes = ", ".join(f"{n}: {{0: batch}}" for n in declared.split(", "))
    return (
        "  inputs: {x: {shape: [batch, 6]}}\n"
        f"  outputs: [{declared}]\n"
        f"  dynamic_axes: {{x: {{0: batch}}, {axes}}}"
    )


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
@pytest.mark.parametrize(("factory", "declared", "returned"), [
    ("detector", "scores, boxes", "['boxes', 'scores']"),
    ("gaussian", "spread, mean", "['mean', 'spread']"),
])  # fmt: skip
def test_outputs_declared_against_the_models_own_names_fail_outputs_naming_both_orders(
    tmp_path: Path, exporter: str, factory: str, declared: str, returned: str
) -> None:
    m = _export(tmp_path, factory, _two_outputs(declared), exporter)
    fails = failed(m)
    assert "outputs" in fails, fails
    assert f"declares [{', '.join(repr(n) for n in declared.split(', '))}]" in fails["outputs"]
    assert f"in the order {returned}" in fails["outputs"]
    # matched by name, the reference shows what the graph's output really holds
    assert "reference-parity" in fails
    right = _export(
        tmp_path / "right", factory, _two_outputs(returned.strip("[]").replace("'", "")), exporter
    )
    assert not failed(right), failed(right)


def test_a_plain_tuple_is_matched_by_position(tmp_path: Path) -> None:
    m = _export(tmp_path, "plain_tuple", _two_outputs("spread, mean"), "torchscript")
    assert "outputs" not in failed(m)  # no names to contradict: the declaration names the positions


SEQUENCE = """\
  inputs: {x: {shape: [batch, seq, 8]}}
  outputs: [y]
  dynamic_axes: {x: {0: batch, 1: seq}, y: {0: batch}}
  dim_sizes: {seq: 6}"""


def test_a_loop_over_a_dynamic_dim_unrolled_without_a_warning_fails_dynamic_axes(tmp_path: Path) -> None:
    m = _export(tmp_path, "stepwise_sum", SEQUENCE, "torchscript")
    flow = _finding(m, "control-flow")
    assert flow.status.value == "passed" and not flow.warnings  # type: ignore[attr-defined]  # no hint
    fails = failed(m)
    assert "dynamic-axes" in fails, fails
    said = fails["dynamic-axes"]
    assert said.startswith("seq is symbolic in the graph, but the graph disagrees with torch at seq = 1")
    assert "seq = 12" in said and "Python loop over seq" in said
    assert "exported at seq = 6" in fails["dynamic-axes"]
    sweep = _finding(m, "dynamic-axes").figures["sweep"]  # type: ignore[attr-defined]
    assert sweep["seq"]["sizes"] == [1, 5, 6, 12] and sweep["batch"]["sizes"] == [1, 3, 2, 4]
    assert sweep["seq"]["results"]["12"].startswith("diverges")


def test_dynamo_specialises_the_unrolled_dim_and_dynamic_axes_says_so(tmp_path: Path) -> None:
    fails = failed(_export(tmp_path, "stepwise_sum", SEQUENCE, "dynamo"))
    assert set(fails) <= {"dynamic-axes", "reference-parity"} and "dynamic-axes" in fails, fails
    assert "axis 1 (seq) is declared dynamic but the graph fixes it at 6" in fails["dynamic-axes"]


IMAGES = """\
  inputs: {x: {shape: [batch, 2, 6, 6]}}
  outputs: [y]
  dynamic_axes: {x: {0: batch}, y: {0: batch}}"""


def test_an_ill_conditioned_probe_convicts_nothing(tmp_path: Path) -> None:
    m = _export(tmp_path, "spatial_norm", IMAGES, "torchscript")
    assert not failed(m), failed(m)
    flow = _finding(m, "control-flow")
    assert any("Python float" in w for w in flow.warnings)  # type: ignore[attr-defined]  # the suspect
    skipped = flow.figures["skipped_probes"]  # type: ignore[attr-defined]
    constant = [s for s in skipped if "(zeros)" in s or "(ones)" in s]
    assert constant and all("ill-conditioned: torch float32 against torch float64" in s for s in constant)
    assert "a fresh random draw" in flow.figures["probes"]  # type: ignore[attr-defined]


SELECTED = """\
  inputs: {x: {shape: [batch, 6]}}
  outputs: [rows, selected]
  dynamic_axes: {x: {0: batch}, rows: {0: batch}, selected: {0: n_selected}}"""


def test_an_output_with_a_dynamic_axis_of_its_own_is_not_sliced_as_a_batch(tmp_path: Path) -> None:
    from tests.corpus import real_models

    entry = real_models.Entry("selected", "masked_select", textwrap.dedent(SELECTED) + "\n")
    (cell,) = real_models.run_entry(entry, tmp_path, (18,), ("torchscript",), factory=f"{TRUTH}:selected")
    assert cell.verdict == "pass", dict(cell.messages)
    import json

    result = json.loads(next((tmp_path / "selected" / "out" / "results").glob("*.json")).read_text())
    batch = {c["name"]: c for c in result["checks"] if c["name"].startswith("batch[")}
    assert batch["batch[4]"]["status"] == "passed"
    assert "not compared: selected (no one axis carries the batch)" in batch["batch[4]"]["message"]


TOKENS = """\
  inputs: {x: {shape: [batch, seq, 16]}}
  outputs: [y]
  dynamic_axes: {x: {0: batch, 1: seq}, y: {0: batch, 1: seq}}
  dim_sizes: {seq: 5}"""


def test_torchscript_exports_the_encoder_layers_own_math_and_the_sweep_finds_its_baked_sizes(
    tmp_path: Path,
) -> None:
    m = _export(tmp_path, "encoder", TOKENS, "torchscript", opset=17)
    fails = failed(m)
    assert "export" not in fails, fails["export"]  # no aten::_transformer_encoder_layer_fwd
    assert "dynamic-axes" in fails and "disagrees with torch at" in fails["dynamic-axes"]
    assert not failed(_export(tmp_path / "dynamo", "encoder", TOKENS, "dynamo"))
