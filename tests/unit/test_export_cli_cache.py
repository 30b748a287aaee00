"""`onnx-gate export --cache-dir` and `--cache-key`: what the export job keeps with actions/cache."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from onnx import TensorProto, helper, numpy_helper

from ci_onnx.cli import cli


def _onnx_only(root: Path, factor: float = 2.0) -> Path:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])
    k = numpy_helper.from_array(np.array(factor, np.float32), "k")
    graph = helper.make_graph([helper.make_node("Mul", ["x", "k"], ["y"])], "g", [x], [y], [k])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    (root / "model.onnx").write_bytes(model.SerializeToString())
    xs = np.arange(6, dtype=np.float32).reshape(2, 3)
    data = root / "data" / "test_data_set_0"
    data.mkdir(parents=True, exist_ok=True)
    (data / "input_0.pb").write_bytes(numpy_helper.from_array(xs, "x").SerializeToString())
    (data / "output_0.pb").write_bytes(numpy_helper.from_array(xs * factor, "y").SerializeToString())
    config = root / "onnx-gate.yml"
    config.write_text(
        "version: 1\nmodel: {onnx: model.onnx, test_data: data, outputs: [y]}\n"
        'targets: {runtimes: ["1.32.0"], providers: [cpu]}\n'
    )
    return config


def _export(config: Path, out: Path, cache: Path, *extra: str, env: dict[str, str] | None = None) -> str:
    args = ["export", "--config", str(config), "--out", str(out), "--cache-dir", str(cache), *extra]
    result = CliRunner(env=env).invoke(cli, args)
    assert result.exit_code == 0, result.output
    return result.output


def test_the_key_names_what_the_export_reads_and_a_second_export_reuses_the_bundle(tmp_path: Path) -> None:
    config = _onnx_only(tmp_path)
    out, cache = tmp_path / "onnx-gate-out" / "bundles", tmp_path / "onnx-gate-out" / "export-cache"
    github_output = tmp_path / "github_output"
    key = _export(config, out, cache, "--cache-key", env={"GITHUB_OUTPUT": str(github_output)}).strip()
    assert len(key) == 32 and f"cache-key<<ghadelim_onnx_gate\n{key}\n" in github_output.read_text()
    assert not out.exists(), "--cache-key exports nothing"
    assert "reused" not in _export(config, out, cache)
    assert _export(config, out, cache, "--cache-key").strip() == key, (
        "the bundles and the cache are not keyed"
    )
    again = _export(config, out, cache)
    assert "op19-onnx: reused from cache" in again
    manifest = json.loads((out / "op19-onnx" / "manifest.json").read_text())
    (export,) = [f for f in manifest["findings"] if f["name"] == "export"]
    assert export["figures"]["cache"] == "reused", "the report lists the bundle as reused"
    _onnx_only(tmp_path, factor=3.0)
    assert _export(config, out, cache, "--cache-key").strip() != key, "a changed model is a new key"


@pytest.mark.parametrize("setting", ["cache: false"])
def test_an_export_cache_turned_off_has_no_key(tmp_path: Path, setting: str) -> None:
    config = _onnx_only(tmp_path)
    config.write_text(config.read_text() + f"export: {{{setting}}}\n")
    key = _export(config, tmp_path / "o", tmp_path / "c", "--cache-key").strip()
    assert key == "off"
