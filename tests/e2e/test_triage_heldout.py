"""Triage on cases it was not built for, each a real TorchScript export verified on a real onnxruntime
environment: a custom autograd Function's symbolic between two modules (the fault is the Mul no
module owns, bracketed between ``a`` and ``b``, never ``b``'s Gemm), and a BatchNorm the export folded
into its Conv with the fault planted after it (the folded Conv is compared with the BatchNorm's output,
so it is never blamed)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from ci_onnx.contracts import bundle as bundles
from tests.e2e import test_triage
from tests.e2e.test_triage import ORT, config, verified

python = test_triage.python  # the target's own environment, a fixture

pytestmark = pytest.mark.e2e

HELDOUT = Path(__file__).parent / "triage" / "heldout.py"


def _config(directory: Path, factory: str, shape: tuple[int | str, ...]) -> Path:
    path = config(directory, factory, exporter="torchscript", shape=shape)
    path.write_text(
        path.read_text().replace(str(Path(__file__).parent / "triage" / "models.py"), str(HELDOUT))
    )
    return path


def test_a_custom_functions_symbolic_is_bracketed_between_the_modules_around_it(
    tmp_path: Path, python: str
) -> None:
    cfg = _config(tmp_path, "custom_function", ("batch", 16))
    result = verified(cfg, "op18-torchscript", f"ort{ORT}-cpu-op18-torchscript", python)
    t = result["triage"]
    assert t["fault"] == "export", t
    assert t["op_type"] == "Mul" and "Gemm" not in t["node"], t
    assert "between `a` and `b`: Mul" in t["summary"], t["summary"]


def _plant_noise_at_the_output(bundle_dir: Path) -> None:
    """y + 0.5 in the graph only: a fault after the folded Conv, at the graph's output."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    path = bundle_dir / "model.onnx"
    model = onnx.load(str(path))
    g = model.graph
    out = g.output[0].name
    for n in g.node:
        n.output[:] = [f"{o}_pre" if o == out else o for o in n.output]
    g.initializer.append(numpy_helper.from_array(np.array(0.5, np.float32), "planted"))
    g.node.append(helper.make_node("Add", [f"{out}_pre", "planted"], [out], name="planted_noise"))
    onnx.save(model, str(path))
    manifest = bundles.read_manifest(bundle_dir, verify_hashes=False)
    bundles.write_manifest(bundle_dir, dataclasses.replace(manifest, files=bundles.hash_files(bundle_dir)))


def test_a_batchnorm_folded_into_its_conv_is_not_blamed_for_a_fault_after_it(
    tmp_path: Path, python: str
) -> None:
    from click.testing import CliRunner

    from ci_onnx.cli import cli

    cfg = _config(tmp_path, "folded_batchnorm", ("batch", 3, 8, 8))
    out, bundle_dir = tmp_path / "out", tmp_path / "bundles" / "op18-torchscript"
    CliRunner().invoke(cli, ["export", "--config", str(cfg), "--out", str(tmp_path / "bundles")])
    assert (bundle_dir / "model.onnx").is_file()
    _plant_noise_at_the_output(bundle_dir)
    target = f"ort{ORT}-cpu-op18-torchscript"
    res = CliRunner().invoke(cli, [
        "verify", "--bundle", str(bundle_dir), "--target", target, "--config", str(cfg), "--out", str(out),
        "--python", python,
    ])  # fmt: skip
    assert res.exit_code == 1, res.output
    import json

    t = json.loads((out / "results" / f"{target}.json").read_text())["triage"]
    assert "features.0" not in t["summary"] and t["op_type"] != "Conv", t
    assert (t["fault"], t["node"]) == ("export", "planted_noise"), t
    assert "between `head` and the output: Add" in t["summary"], t["summary"]
