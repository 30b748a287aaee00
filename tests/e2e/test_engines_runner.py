"""The same bundle on onnxruntime, OpenVINO's own runtime and tract (their latest releases from PyPI),
judged by one judge; and a model with an op the engines refuse, a failed load check in their words."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx import TensorProto, helper, numpy_helper

from ci_onnx.cli import cli
from tests.conftest import DIGITNET_MODEL

pytestmark = pytest.mark.e2e

CONFIG = f"""\
version: 1
{DIGITNET_MODEL}export: {{opsets: [18], exporters: [dynamo]}}
verify:
  random_inputs: 16
  decision: {{output: logits}}
  batch_sizes: [1, 8]
  latency_runs: 5
targets:
  runtimes: [latest]
  providers: [cpu]
  runners: [python, openvino, tract]
  engine_presets: {{openvino: {{throughput: {{PERFORMANCE_HINT: THROUGHPUT, INFERENCE_PRECISION_HINT: f32}}}}}}
"""


def _results(out: Path) -> dict[str, dict[str, Any]]:
    return {p.stem: json.loads(p.read_text()) for p in (out / "results").glob("*.json")}


def _check(result: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in result["checks"] if c["name"] == name)


@pytest.fixture(scope="module")
def three(tmp_path_factory: pytest.TempPathFactory, env_cache: Path) -> tuple[dict[str, Any], int, str]:
    work = tmp_path_factory.mktemp("engines")
    (work / "onnx-gate.yml").write_text(CONFIG)
    args = ["run", "--config", str(work / "onnx-gate.yml"), "--out", str(work / "out")]
    done = CliRunner().invoke(cli, [*args, "--cache-dir", str(env_cache), "--jobs", "2"])
    return _results(work / "out"), done.exit_code, done.output


def test_each_engine_is_a_kind_of_the_matrix_with_its_own_release(
    three: tuple[dict[str, Any], int, str],
) -> None:
    results, _, output = three
    by_runner = {
        r["target"]["runner"]: r for r in results.values() if r["target"]["session_options"] == "default"
    }
    assert set(by_runner) == {"python", "openvino", "tract"}, output
    for kind, r in by_runner.items():
        release = r["target"]["runtime"]
        assert r["observation"]["environment"]["runtime_version"] == release
        head = "ort" if kind == "python" else kind
        assert f"{head}{release}-cpu-op18-dynamo" in results, sorted(results)
        cold = _check(r, "cold-start")  # a fresh process of the engine's own environment
        assert cold["status"] == "passed", cold
        if kind != "python":
            assert (
                r["observation"]["serving"]["runtime_package"] == kind
                and r["observation"]["serving"]["runtime_bytes"] > 1_000_000
            )


def test_onnxruntime_and_tract_agree_with_pytorch(three: tuple[dict[str, Any], int, str]) -> None:
    results, _, _ = three
    for r in results.values():
        if r["target"]["runner"] in ("python", "tract"):
            assert r["status"] == "passed", r["summary"]
            assert _check(r, "parity[logits]")["figures"]["max_abs"] < 1e-4
    tract = next(r for r in results.values() if r["target"]["runner"] == "tract")
    assert "tract reports no placement" in _check(tract, "fallback")["message"]  # skipped, saying why


def test_openvino_in_f32_agrees_and_its_defaults_run_in_whatever_this_cpu_picks(
    three: tuple[dict[str, Any], int, str],
) -> None:
    results, code, output = three
    f32 = next(r for r in results.values() if r["target"]["session_options"] == "f32")
    assert f32["status"] == "passed", f32["summary"]
    assert _check(f32, "engine-precision")["figures"]["effective"]["INFERENCE_PRECISION_HINT"] == "f32"
    default = next(
        r
        for r in results.values()
        if r["target"]["runner"] == "openvino" and r["target"]["session_options"] == "default"
    )
    took = _check(default, "engine-precision")["figures"]["effective"]["INFERENCE_PRECISION_HINT"]
    assert _check(default, "engine-precision")["figures"]["effective"]["PERFORMANCE_HINT"]
    if took == "bf16":  # a CPU with AVX512_BF16 or AMX: OpenVINO's defaults run the f32 model in bf16
        assert default["status"] == "failed" and code == 1, output
        assert _check(default, "engine-precision")["status"] == "failed"
        assert _check(default, "parity[logits]")["status"] == "failed"
        assert _check(default, "parity[logits]")["figures"]["max_abs"] > 1e-3
    else:
        assert took == "f32" and default["status"] == "passed" and code == 0, output


def _det_model(work: Path) -> Path:
    """An ONNX-only model whose one op (Det) onnxruntime runs and neither OpenVINO nor tract does."""
    graph = helper.make_graph(
        [helper.make_node("Det", ["x"], ["y"])],
        "det",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch"])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 10  # past what onnxruntime's oldest tabled release loads: no table applies here
    onnx.save(model, work / "model.onnx")
    data = work / "test_data" / "test_data_set_0"
    data.mkdir(parents=True)
    x = np.random.default_rng(0).standard_normal((4, 3, 3)).astype(np.float32)
    (data / "input_0.pb").write_bytes(numpy_helper.from_array(x, "x").SerializeToString())
    y = np.linalg.det(x.astype(np.float64)).astype(np.float32)
    (data / "output_0.pb").write_bytes(numpy_helper.from_array(y, "y").SerializeToString())
    return work


def test_an_op_the_engines_lack_is_a_failed_load_check_in_their_words(
    tmp_path: Path, env_cache: Path
) -> None:
    work = _det_model(tmp_path)
    (work / "onnx-gate.yml").write_text(
        "version: 1\nmodel: {onnx: model.onnx, test_data: test_data}\n"
        "verify: {batch_sizes: [1], latency_runs: 3}\n"
        "targets: {runtimes: [latest], providers: [cpu], runners: [python, openvino, tract]}\n"
    )
    args = ["run", "--config", str(work / "onnx-gate.yml"), "--out", str(work / "out")]
    done = CliRunner().invoke(cli, [*args, "--cache-dir", str(env_cache), "--jobs", "2"])
    assert done.exit_code == 1, done.output  # failed checks, not an environment error (3)
    results = _results(work / "out")
    words = {"openvino": "No conversion rule found for operations: Det", "tract": "Unimplemented(Det)"}
    for r in results.values():
        kind = r["target"]["runner"]
        if kind == "python":
            assert r["status"] == "passed", r["summary"]
            continue
        assert r["status"] == "failed", (kind, r["summary"])
        load = _check(r, "load")
        assert load["status"] == "failed" and words[kind] in load["message"], load
        assert "Stack backtrace" not in load["message"]


def test_a_configs_own_engine_preset_is_a_cell_whose_result_records_what_the_engine_took(
    three: tuple[dict[str, Any], int, str],
) -> None:
    results, _, _ = three
    cell = next(r for r in results.values() if r["target"]["session_options"] == "throughput")
    precision = _check(cell, "engine-precision")["figures"]
    assert precision["set"] == {"PERFORMANCE_HINT": "THROUGHPUT", "INFERENCE_PRECISION_HINT": "f32"}
    assert precision["effective"]["PERFORMANCE_HINT"] == "THROUGHPUT"
    assert cell["status"] == "passed", cell["summary"]
