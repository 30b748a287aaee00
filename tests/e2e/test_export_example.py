"""`onnx-gate export` on the example DigitNet: bundles that numpy_helper loads, manifests that validate."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import numpy as np
import onnx
import pytest
from export_helpers import failed, manifest, raw, run_export
from onnx import numpy_helper

from ci_onnx import export
from ci_onnx.contracts.schema import load_schema

pytestmark = pytest.mark.e2e

EXAMPLE = Path(__file__).parents[2] / "examples" / "tinycnn"


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bundles")
    result = run_export(EXAMPLE / "onnx-gate.yml", out)
    assert result.exit_code == 0, result.output
    for key in ("op17-dynamo", "op17-torchscript", "op18-dynamo", "op18-torchscript"):
        assert f"{key}: passed" in result.output
    return out


def _tensor(path: Path) -> np.ndarray:
    t = onnx.TensorProto()
    t.ParseFromString(path.read_bytes())
    return numpy_helper.to_array(t)


def test_every_bundle_passes_and_its_manifest_validates(bundles: Path) -> None:
    schema = load_schema("manifest.schema.json")
    keys = sorted(p.name for p in bundles.iterdir())
    assert keys == ["op17-dynamo", "op17-torchscript", "op18-dynamo", "op18-torchscript"]
    for key in keys:
        jsonschema.validate(raw(bundles / key), schema)
        m = manifest(bundles / key)  # checks every sha256
        assert failed(m) == {}
        assert [f.name for f in m.findings] == list(export.CHECKS)
        assert m.opset == m.requested_opset == int(key[2:4])
        assert m.exporter == key.split("-")[1]
        assert m.preprocessing is not None and m.preprocessing.channel_order == "gray"
        assert set(m.versions) >= {"torch", "onnx", "onnxruntime", "onnxscript", "onnx-gate"}


def test_test_data_sets_hold_the_random_inputs_and_the_real_samples(bundles: Path) -> None:
    bundle = bundles / "op18-dynamo"
    m = manifest(bundle)
    assert [(s.directory, s.kind, s.count) for s in m.test_data_sets] == [
        ("test_data_set_0", "random", 16),
        ("test_data_set_1", "sample", len(np.load(EXAMPLE / "samples.npz")["image"])),
    ]
    random_in = _tensor(bundle / "test_data_set_0" / "input_0.pb")
    assert random_in.shape == (16, 1, 8, 8) and random_in.dtype == np.float32
    samples = np.load(EXAMPLE / "samples.npz")
    np.testing.assert_array_equal(_tensor(bundle / "test_data_set_1" / "input_0.pb"), samples["image"])
    logits = _tensor(bundle / "test_data_set_1" / "output_0.pb")
    assert logits.shape == (len(samples["image"]), 10)
    # the samples' labels travel beside their references (label_<output index>.pb), and into the manifest
    labels = _tensor(bundle / "test_data_set_1" / "label_0.pb")
    np.testing.assert_array_equal(labels, samples["labels"])
    assert "test_data_set_1/label_0.pb" in m.files
    t = onnx.TensorProto()
    t.ParseFromString((bundle / "test_data_set_0" / "output_0.pb").read_bytes())
    assert t.name == "logits"


def test_only_selects_bundles_by_key_without_the_package_index(tmp_path: Path) -> None:
    result = run_export(EXAMPLE / "onnx-gate.yml", tmp_path, "--only", "op18-torch*")
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["op18-torchscript"]
    assert (
        json.loads((tmp_path / "op18-torchscript" / "manifest.json").read_text())["exporter"] == "torchscript"
    )
