"""ONNX-only mode: model.onnx plus a test-data directory becomes a bundle, without torch."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from click.testing import CliRunner
from onnx import TensorProto, helper, numpy_helper

from ci_onnx.cli import cli
from ci_onnx.contracts.bundle import read_manifest
from ci_onnx.contracts.target import Status


def _make(tmp_path: Path, scale_in_data: float) -> Path:
    """y = 2 * x at opset 17; the test data says y = scale_in_data * x."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])
    two = numpy_helper.from_array(np.array(2.0, np.float32), "two")
    graph = helper.make_graph([helper.make_node("Mul", ["x", "two"], ["y"])], "g", [x], [y], [two])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "model.onnx")
    data = tmp_path / "data" / "test_data_set_0"
    data.mkdir(parents=True)
    xs = np.arange(12, dtype=np.float32).reshape(4, 3)
    (data / "input_0.pb").write_bytes(numpy_helper.from_array(xs, "x").SerializeToString())
    ys = (xs * scale_in_data).astype(np.float32)
    (data / "output_0.pb").write_bytes(numpy_helper.from_array(ys, "y").SerializeToString())
    cfg = tmp_path / "onnx-gate.yml"
    cfg.write_text("version: 1\nmodel: {onnx: model.onnx, test_data: data, outputs: [y]}\n")
    return cfg


def test_onnx_only_bundle_is_keyed_by_the_files_opset_and_checked(tmp_path: Path) -> None:
    cfg = _make(tmp_path, 2.0)
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["export", "--config", str(cfg), "--out", str(out)])
    assert result.exit_code == 0, result.output
    m = read_manifest(out / "op17-onnx")
    status = {f.name: f.status for f in m.findings}
    assert status["export"] is Status.SKIPPED and status["control-flow"] is Status.SKIPPED
    assert all(status[n] is Status.PASSED for n in ("checker", "opset", "train-mode", "outputs", "graph"))
    assert status["reference-parity"] is Status.SKIPPED  # each target compares with the test data
    assert (m.exporter, m.opset, m.ir_version) == ("onnx", 17, 8)
    assert m.dynamic_axes == {"x": {"0": "n"}, "y": {"0": "n"}}
    assert [(s.directory, s.kind, s.count) for s in m.test_data_sets] == [("test_data_set_0", "sample", 4)]
    assert (out / "op17-onnx" / "test_data_set_0" / "output_0.pb").is_file()


def test_onnx_only_copies_the_test_data_byte_for_byte(tmp_path: Path) -> None:
    """The export stage does not judge the test data: the targets do, each on its own runtime."""
    cfg = _make(tmp_path, 3.0)
    result = CliRunner().invoke(cli, ["export", "--config", str(cfg), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    m = read_manifest(tmp_path / "out" / "op17-onnx")
    (parity,) = [f for f in m.findings if f.name == "reference-parity"]
    assert parity.status is Status.SKIPPED and "each target" in parity.message
    for name in ("input_0.pb", "output_0.pb"):
        written = tmp_path / "out" / "op17-onnx" / "test_data_set_0" / name
        assert written.read_bytes() == next(tmp_path.rglob(f"data/test_data_set_0/{name}")).read_bytes()


def test_onnx_only_without_test_data_draws_random_inputs_against_onnxruntimes_unoptimised_run(
    tmp_path: Path,
) -> None:
    """plan passed and run failed here: the docs and init call test_data optional, and it is."""
    import onnxruntime as ort

    cfg = _make(tmp_path, 2.0)
    cfg.write_text("version: 1\nmodel: {onnx: model.onnx}\nverify: {random_inputs: 5, seed: 3}\n")
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["export", "--config", str(cfg), "--out", str(out)])
    assert result.exit_code == 0, result.output
    m = read_manifest(out / "op17-onnx")
    assert [(s.directory, s.kind, s.count) for s in m.test_data_sets] == [("test_data_set_0", "random", 5)]
    (parity,) = [f for f in m.findings if f.name == "reference-parity"]
    assert f"onnxruntime {ort.__version__}'s CPU run with every graph optimization off" in parity.message
    assert "5 seeded random inputs" in parity.message
    written = out / "op17-onnx" / "test_data_set_0"
    x = numpy_helper.to_array(onnx.load_tensor(str(written / "input_0.pb")))
    y = numpy_helper.to_array(onnx.load_tensor(str(written / "output_0.pb")))
    assert x.shape == (5, 3) and np.array_equal(y, 2 * x)  # the model's own numbers, on random x
    again = tmp_path / "again"
    CliRunner().invoke(cli, ["export", "--config", str(cfg), "--out", str(again)])
    assert (again / "op17-onnx" / "test_data_set_0" / "input_0.pb").read_bytes() == (
        written / "input_0.pb"
    ).read_bytes()  # seeded


def _int_model(tmp_path: Path) -> None:
    ids = helper.make_tensor_value_info("ids", TensorProto.INT64, ["n", 4])
    table = numpy_helper.from_array(np.arange(20, dtype=np.float32).reshape(10, 2), "table")
    out = helper.make_tensor_value_info("emb", TensorProto.FLOAT, ["n", 4, 2])
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "ids"], ["emb"])], "g", [ids], [out], [table]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "model.onnx")


def test_onnx_only_integer_inputs_without_test_data_need_a_range(tmp_path: Path) -> None:
    _int_model(tmp_path)
    cfg = tmp_path / "onnx-gate.yml"
    cfg.write_text("version: 1\nmodel: {onnx: model.onnx}\n")
    result = CliRunner().invoke(cli, ["export", "--config", str(cfg), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    line = result.output.strip().splitlines()[-1]
    assert "model.inputs.ids.range" in line and "[low, high)" in line
    cfg.write_text("version: 1\nmodel: {onnx: model.onnx, inputs: {ids: {shape: [n, 4], range: [0, 10]}}}\n")
    result = CliRunner().invoke(cli, ["export", "--config", str(cfg), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    ids = numpy_helper.to_array(onnx.load_tensor(str(tmp_path / "out/op17-onnx/test_data_set_0/input_0.pb")))
    assert ids.min() >= 0 and ids.max() < 10


def test_plan_and_export_read_the_file_s_opset_in_one_place(tmp_path: Path) -> None:
    """`plan` used export.opsets for an ONNX-only model while `export` wrote the file's opset."""
    cfg = _make(tmp_path, 2.0)
    cfg.write_text(cfg.read_text() + "targets: {runtimes: ['1.32.0']}\n")
    planned = CliRunner().invoke(cli, ["plan", "--config", str(cfg), "--format", "json"])
    assert planned.exit_code == 0, planned.output
    assert '"opset": 17' in planned.output
    out = tmp_path / "out"
    exported = CliRunner().invoke(
        cli, ["export", "--config", str(cfg), "--out", str(out), "--only", "*-op17-onnx"]
    )
    assert exported.exit_code == 0, exported.output
    assert (out / "op17-onnx" / "manifest.json").is_file()


def test_a_model_with_only_the_ml_domain_still_gets_a_bundle(tmp_path: Path) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])
    node = helper.make_node("Normalizer", ["x"], ["y"], domain="ai.onnx.ml", norm="MAX")
    model = helper.make_model(
        helper.make_graph([node], "g", [x], [y]), opset_imports=[helper.make_opsetid("ai.onnx.ml", 1)]
    )
    model.ir_version = 8
    onnx.save(model, tmp_path / "model.onnx")
    data = tmp_path / "data" / "test_data_set_0"
    data.mkdir(parents=True)
    xs = np.array([[1.0, 2.0]], np.float32)
    (data / "input_0.pb").write_bytes(numpy_helper.from_array(xs, "x").SerializeToString())
    (data / "output_0.pb").write_bytes(numpy_helper.from_array(xs / 2, "y").SerializeToString())
    cfg = tmp_path / "onnx-gate.yml"
    cfg.write_text(
        "version: 1\nmodel: {onnx: model.onnx, test_data: data}\ntargets: {runtimes: ['1.32.0']}\n"
    )
    result = CliRunner().invoke(cli, ["export", "--config", str(cfg), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    m = read_manifest(tmp_path / "out" / "op0-onnx")
    assert (m.opset, m.ir_version) == (0, 8)


def test_verify_batch_sizes_may_be_empty(tmp_path: Path) -> None:
    cfg = _make(tmp_path, 2.0)
    cfg.write_text(cfg.read_text() + "verify: {batch_sizes: []}\n")
    result = CliRunner().invoke(cli, ["export", "--config", str(cfg), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert read_manifest(tmp_path / "out" / "op17-onnx").batch_sizes == ()


def test_declared_opsets_that_miss_the_file_s_opset_are_a_config_error(tmp_path: Path) -> None:
    cfg = _make(tmp_path, 2.0)
    cfg.write_text(cfg.read_text() + "export: {opsets: [15, 18]}\ntargets: {runtimes: ['1.32.0']}\n")
    for command in ("plan", "export"):
        result = CliRunner().invoke(cli, [command, "--config", str(cfg)])
        assert result.exit_code == 2, result.output
        assert "export.opsets: [15, 18], but model.onnx is at opset 17" in result.output
        assert "set it to [17]" in result.output
    cfg.write_text(cfg.read_text().replace("[15, 18]", "[17]"))
    assert CliRunner().invoke(cli, ["plan", "--config", str(cfg)]).exit_code == 0
