"""The openvino runner kind without OpenVINO: its presets as data, the observer's reading of the
compiled graph (the precision each node ran in), the engine-precision check the judge draws from it,
and how its cells are planned and launched."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from ci_onnx import config, matrix
from ci_onnx import plan as planning
from ci_onnx.contracts import serde
from ci_onnx.contracts.errors import ConfigError
from ci_onnx.contracts.results import SCHEMA_VERSION, Environment, Observation
from ci_onnx.contracts.target import Status, Target
from ci_onnx.contracts.verify_options import VerifyOptions, options_from
from ci_onnx.observer import openvino_engine as ov
from ci_onnx.runners import base, openvino
from ci_onnx.verify import engine_precision
from tests.conftest import EXAMPLE_CONFIG, FakeIndex

# The runtime graph of DigitNet compiled with OpenVINO 2026.4.1's defaults on a CPU with AVX512_BF16
# (name, layerType, runtimePrecision, outputPrecisions), as get_runtime_model() gave it, shortened.
BF16_GRAPH = [
    ("image", "Input", "f32", "f32"),
    ("image_f32_abcd_bf16_acdb_node_Conv_25/WithoutBiases", "Reorder", "f32", "bf16"),
    ("model.features.0.weight", "Const", "f32", "f32"),
    ("Constant_5549", "Const", "i32", "i32"),
    ("Reshape_15_flatten_reshape", "Reshape", "f32", "f32"),
    ("node_Conv_25/WithoutBiases", "Convolution", "bf16", "bf16"),
    ("node_max_pool2d", "Pooling", "bf16", "bf16"),
    ("node_Reshape_30", "Reshape", "bf16", "bf16"),
    ("shape_of", "ShapeOf", "i64", "i64"),
    ("logits", "FullyConnected", "bf16", "f32"),
    ("logits/sink_port_0", "Output", "f32", "f32"),
]
F32_GRAPH = [(n, t, "f32" if p == "bf16" else p, "f32" if o == "bf16" else o) for n, t, p, o in BF16_GRAPH]
TOOK_BF16 = {
    "INFERENCE_PRECISION_HINT": "bf16",
    "PERFORMANCE_HINT": "LATENCY",
    "EXECUTION_MODE_HINT": "PERFORMANCE",
}


def _obs() -> Observation:
    env = Environment("2026.4.1", ("CPU",), ("CPUExecutionProvider",), "linux", "openvino-python")
    return Observation(SCHEMA_VERSION, "openvino2026.4.1-cpu-op18-dynamo", env)


def test_only_computing_float_nodes_in_another_precision_than_asked_are_named() -> None:
    assert ov.other_precision(BF16_GRAPH, "f32") == [
        ("node_Conv_25/WithoutBiases", "Convolution", "bf16"),
        ("node_max_pool2d", "Pooling", "bf16"),
        ("node_Reshape_30", "Reshape", "bf16"),
        ("logits", "FullyConnected", "bf16"),
    ]  # not the input, the bf16 Reorder, the constants, nor the i64 ShapeOf
    assert ov.other_precision(F32_GRAPH, "f32") == []
    assert ov.other_precision(BF16_GRAPH, "") == []  # nothing asked (an int8 bundle): nothing judged


def test_the_observation_records_the_placement_per_precision_and_what_the_engine_took() -> None:
    obs = ov.annotated(_obs(), {}, TOOK_BF16, BF16_GRAPH, "f32")
    assert obs.placement is not None and obs.placement.source == "runtime-model"
    assert obs.placement.nodes_by_provider == {"CPU f32": 1, "CPU bf16": 4, "CPU i64": 1}
    p = obs.engine_precision
    assert p is not None and (p.asked, p.nodes, p.set, p.effective) == ("f32", 6, {}, TOOK_BF16)
    first = p.other_precision[0]
    assert (first.name, first.op_type, first.provider) == (
        "node_Conv_25/WithoutBiases",
        "Convolution",
        "CPU bf16",
    )
    again = serde.from_json(Observation, json.loads(serde.dumps(obs)))  # observation.json round trip
    assert again == obs


def test_a_node_run_in_bf16_when_f32_was_asked_fails_the_check_naming_it_and_the_hint() -> None:
    (check,) = engine_precision.checks(ov.annotated(_obs(), {}, TOOK_BF16, BF16_GRAPH, "f32"))
    assert check.name == "engine-precision" and check.status is Status.FAILED
    assert check.message.startswith(
        "4 of 6 computing nodes ran in bf16, not f32 as asked (the engine's defaults;"
    )
    assert (
        "INFERENCE_PRECISION_HINT bf16" in check.message
        and "node_Conv_25/WithoutBiases (Convolution)" in check.message
    )
    assert check.figures["effective"] == TOOK_BF16  # the result records what the engine took


def test_the_f32_preset_that_runs_every_node_in_f32_passes() -> None:
    took = {**TOOK_BF16, "INFERENCE_PRECISION_HINT": "f32"}
    f32 = {"INFERENCE_PRECISION_HINT": "f32"}
    (check,) = engine_precision.checks(ov.annotated(_obs(), f32, took, F32_GRAPH, "f32"))
    assert check.status is Status.PASSED
    assert check.message.startswith("all 6 computing nodes ran in f32 (INFERENCE_PRECISION_HINT=f32; took")
    assert engine_precision.checks(_obs()) == []  # a kind that observes no engine precision: no check


class _Any:
    """An OVAny: rt_info values are read through astype(str)."""

    def __init__(self, v: str) -> None:
        self.v = v

    def astype(self, t: type) -> str:
        return t(self.v)


class _Type:
    """An element type: read through get_type_name (no astype)."""

    def get_type_name(self) -> str:
        return "bf16"


def test_engine_values_are_read_as_text() -> None:
    assert ov.text(_Any("bf16")) == "bf16"
    assert ov.text(_Type()) == "bf16"
    assert ov.text("LATENCY") == "LATENCY"


def test_the_presets_are_data_on_the_kinds_row() -> None:
    info = matrix.runners()["openvino"]
    assert info.presets == {"default": {}, "f32": {"INFERENCE_PRECISION_HINT": "f32"}}
    assert (info.package, info.providers, info.releases) == ("openvino", ("cpu",), ("latest",))
    assert base.get("openvino") is openvino.RUNNER


def _plan(**targets: object) -> planning.Plan:
    base_config = config.load(EXAMPLE_CONFIG)
    cfg = dataclasses.replace(
        base_config,
        export=dataclasses.replace(base_config.export, opsets=(18,), exporters=("dynamo",)),
        targets=config.TargetsConfig(
            **{
                "runtimes": ("1.20.1",),
                "providers": ("cpu",),
                "runners": ("python", "openvino"),
                "include": (),
                "exclude": (),
                **targets,
            }
        ),  # type: ignore[arg-type]
    )
    index = FakeIndex({"onnxruntime": ["1.32.0", "1.20.1"], "openvino": ["2026.4.1", "2025.3.0"]})
    return planning.expand(cfg, index)


def test_its_cells_take_the_engines_latest_release_and_each_preset() -> None:
    plan = _plan()
    cells = [t.cell_id for t in plan.targets if t.runner == "openvino"]
    assert set(cells) == {
        "openvino2026.4.1-cpu-op18-dynamo",
        "openvino2026.4.1-cpu-op18-dynamo-so-f32",
    }  # its own release, not targets.runtimes' 1.20.1 (opset 18 on onnxruntime 1.20 loads either way)
    assert all(not t.expected_skip for t in plan.targets if t.runner == "openvino")
    assert "openvino options INFERENCE_PRECISION_HINT=f32" in planning.render_table(plan)


def test_an_unknown_preset_of_an_included_cell_is_a_config_error() -> None:
    cell = {
        "runtime": "2026.4.1",
        "provider": "cpu",
        "opset": "18",
        "exporter": "dynamo",
        "runner": "openvino",
    }
    with pytest.raises(
        ConfigError,
        match=r"the openvino runner's presets are default, f32 \(runners.toml and targets.engine_presets\), not 'no_opt'",
    ):
        _plan(include=({**cell, "session_options": "no_opt"},))


def test_the_launch_hands_the_cells_preset_to_the_observer(tmp_path: Path) -> None:
    target = Target("2026.4.1", "cpu", 18, "dynamo", runner="openvino", session_options="f32")
    env = base.RunnerEnv("openvino", "2026.4.1", tmp_path, "/env/bin/python", "openvino")
    x = base.Launch(tmp_path / "b", target, tmp_path / "o", VerifyOptions(), "CPUExecutionProvider")
    argv = openvino.RUNNER.argv(env, x)
    assert argv[:3] == ["/env/bin/python", "-m", "ci_onnx.observer.openvino_engine"]
    assert json.loads(argv[argv.index("--engine-options") + 1]) == {"INFERENCE_PRECISION_HINT": "f32"}
    default = dataclasses.replace(target, session_options="default")
    argv = openvino.RUNNER.argv(env, dataclasses.replace(x, target=default))
    assert json.loads(argv[argv.index("--engine-options") + 1]) == {}


def _config(tmp_path: Path, presets: str) -> config.Config:
    (tmp_path / "onnx-gate.yml").write_text(
        "version: 1\nmodel: {onnx: model.onnx}\n"
        "targets:\n  runtimes: [latest]\n  providers: [cpu]\n  runners: [openvino]\n" + presets
    )
    return config.load(tmp_path / "onnx-gate.yml")


def test_a_config_adds_its_own_engine_presets_which_plan_and_launch_carry(tmp_path: Path) -> None:
    cfg = _config(
        tmp_path,
        "  engine_presets:\n    openvino:\n"
        "      throughput: {PERFORMANCE_HINT: THROUGHPUT, INFERENCE_NUM_THREADS: 2, ENABLE_CPU_PINNING: false}\n",
    )
    assert cfg.targets.engine_presets == {
        "openvino": {
            "throughput": {
                "PERFORMANCE_HINT": "THROUGHPUT",
                "INFERENCE_NUM_THREADS": "2",
                "ENABLE_CPU_PINNING": "NO",
            }
        }
    }
    options = options_from(cfg)
    target = Target("2026.4.1", "cpu", 18, "onnx", runner="openvino", session_options="throughput")
    env = base.RunnerEnv("openvino", "2026.4.1", tmp_path, "/env/bin/python", "openvino")
    argv = openvino.RUNNER.argv(
        env, base.Launch(tmp_path, target, tmp_path / "o", options, "CPUExecutionProvider")
    )
    assert json.loads(argv[argv.index("--engine-options") + 1])["PERFORMANCE_HINT"] == "THROUGHPUT"
    assert matrix.runners()["openvino"].presets_with(options.engine_presets).keys() == {
        "default",
        "f32",
        "throughput",
    }
    assert (
        matrix.runners()["python"].presets_with(options.engine_presets) == {}
    )  # onnxruntime's are session options


def test_a_config_preset_may_not_redefine_the_kinds_own(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError,
        match=r"engine_presets.openvino.f32.*'f32' is a preset of the openvino runner already \(INFERENCE_PRECISION_HINT=f32\)",
    ):
        _config(tmp_path, "  engine_presets:\n    openvino:\n      f32: {INFERENCE_PRECISION_HINT: bf16}\n")
    with pytest.raises(ConfigError, match="engine_presets"):
        _config(tmp_path, "  engine_presets:\n    tract:\n      fast: {X: 1}\n")  # tract has no presets


def test_the_config_schema_names_the_kinds_that_have_engine_presets() -> None:
    from ci_onnx.contracts.schema import load_schema

    targets = load_schema("config.schema.json")["properties"]["targets"]["properties"]
    kinds = targets["engine_presets"]["propertyNames"]["enum"]
    assert kinds == [k for k, info in matrix.runners().items() if info.presets] == ["openvino"]
