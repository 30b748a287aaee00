"""Planted pitfalls: each fails exactly its check, with a message a user can act on."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from export_helpers import PITFALLS, failed, manifest, run_export, write_config

pytestmark = pytest.mark.e2e


def _config(
    tmp_path: Path, factory: str, shape: str, opset: int, exporter: str, dynamic: bool = True
) -> Path:
    axes = "dynamic_axes: {x: {0: batch}, y: {0: batch}}" if dynamic else ""
    return write_config(
        tmp_path,
        f"""\
        model:
          factory: {PITFALLS}:{factory}
          inputs: {{x: {{shape: {shape}}}}}
          outputs: [y]
          {axes}
        export: {{opsets: [{opset}], exporters: [{exporter}]}}
        verify: {{random_inputs: 4, batch_sizes: [1, 8]}}
        """,
    )


def _export(tmp_path: Path, *args: object, **kwargs: object) -> tuple[int, dict[str, str], Path]:
    cfg = _config(tmp_path, *args, **kwargs)  # type: ignore[arg-type]
    out = tmp_path / "bundles"
    result = run_export(cfg, out)
    bundle = next(out.iterdir())
    return result.exit_code, failed(manifest(bundle)), bundle


def test_train_mode_batch_norm_fails_train_mode(tmp_path: Path) -> None:
    code, fails, _ = _export(tmp_path, "train_mode", "[batch, 3, 8, 8]", 17, "torchscript")
    assert code == 1
    assert set(fails) == {"train-mode"}
    assert "BatchNormalization" in fails["train-mode"] and "training=True" in fails["train-mode"]


def test_tensor_branch_traced_by_torchscript_fails_control_flow(tmp_path: Path) -> None:
    code, fails, bundle = _export(tmp_path, "control_flow", "[batch, 8]", 17, "torchscript")
    assert code == 1
    assert set(fails) == {"control-flow"}
    assert "Converting a tensor to a Python" in fails["control-flow"]
    assert "models.py" in fails["control-flow"]  # points at the line that branched
    assert (bundle / "model.onnx").is_file()


def test_tensor_branch_under_dynamo_is_reported_as_control_flow(tmp_path: Path) -> None:
    code, fails, bundle = _export(tmp_path, "control_flow", "[batch, 8]", 18, "dynamo")
    assert code == 1
    assert set(fails) == {"control-flow"}, "the control flow is the cause; export only says no file"
    assert "data-dependent" in fails["control-flow"]
    assert "\x1b[" not in fails["control-flow"]
    export = next(
        f for f in json.loads((bundle / "manifest.json").read_text())["findings"] if f["name"] == "export"
    )
    assert export["status"] == "skipped" and "see control-flow" in export["message"]
    assert not (bundle / "model.onnx").exists()


def test_omitted_dynamic_axes_fail_dynamic_axes_and_batch_8_cannot_run(tmp_path: Path) -> None:
    import onnxruntime as ort

    code, fails, bundle = _export(tmp_path, "small", "[batch, 8]", 18, "dynamo", dynamic=False)
    assert code == 1
    assert set(fails) == {"dynamic-axes"}
    assert "model.dynamic_axes.x: {0: batch}" in fails["dynamic-axes"]
    session = ort.InferenceSession(str(bundle / "model.onnx"), providers=["CPUExecutionProvider"])
    session.run(None, {"x": np.zeros((1, 8), np.float32)})
    with pytest.raises(Exception, match=r"(?i)dimension|shape"):
        session.run(None, {"x": np.zeros((8, 8), np.float32)})


def test_opset_not_honoured_by_dynamo_fails_opset(tmp_path: Path) -> None:
    code, fails, bundle = _export(tmp_path, "pooled", "[batch, 3, 8, 8]", 17, "dynamo")
    assert code == 1
    assert set(fails) == {"opset"}
    assert "asked for opset 17 but the file is at opset 18" in fails["opset"]
    m = manifest(bundle)
    assert (m.requested_opset, m.opset) == (17, 18)
    (export,) = [f for f in m.findings if f.name == "export"]
    assert any("operator set version 18" in w for w in export.warnings)  # dynamo only logs it


@pytest.mark.parametrize(("opset", "exporter"), [(17, "torchscript"), (18, "dynamo")])
def test_unsupported_operator_fails_export_naming_it(tmp_path: Path, opset: int, exporter: str) -> None:
    code, fails, _ = _export(tmp_path, "eigh", "[batch, 4, 4]", opset, exporter)
    assert code == 1
    assert set(fails) == {"export"}
    assert "aten::linalg_eigh" in fails["export"]
    assert "made by" in fails["export"] and "models.py:" in fails["export"]  # the construct, named
    assert "\x1b[" not in fails["export"]


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_an_output_named_like_the_input_fails_outputs(tmp_path: Path, exporter: str) -> None:
    cfg = write_config(
        tmp_path,
        f"""\
        model:
          factory: {PITFALLS}:small
          inputs: {{x: {{shape: [batch, 8]}}}}
          outputs: [x]
          dynamic_axes: {{x: {{0: batch}}}}
        export: {{opsets: [18], exporters: [{exporter}]}}
        verify: {{random_inputs: 4}}
        """,
    )
    result = run_export(cfg, tmp_path / "bundles")
    assert result.exit_code == 1
    fails = failed(manifest(tmp_path / "bundles" / f"op18-{exporter}"))
    assert "clash with" in fails["outputs"]


def test_factory_that_raises_is_one_line_naming_the_key(tmp_path: Path) -> None:
    cfg = _config(tmp_path, "raises", "[batch, 8]", 18, "dynamo")
    result = run_export(cfg, tmp_path / "bundles")
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert lines[-1].startswith("onnx-gate: error: model.factory:")
    assert "weights.pt not found" in lines[-1]
