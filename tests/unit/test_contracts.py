"""The contracts: JSON round-trip, JSON Schemas in step with the dataclasses, readable ids."""

from __future__ import annotations

import json

import jsonschema
import pytest

from ci_onnx.contracts import schema, serde
from ci_onnx.contracts.bundle import Decision, Manifest, TensorSpec, TestDataSet, Tolerance
from ci_onnx.contracts.errors import UsageError
from ci_onnx.contracts.results import (
    RESULT_SCHEMA_VERSION,
    CheckResult,
    DecisionStats,
    Environment,
    LatencyStat,
    OutputParity,
    PlacedNode,
    Placement,
    TargetResult,
)
from ci_onnx.contracts.target import Status, Target
from tests.support.results import observation


def test_committed_schemas_are_the_generated_ones() -> None:
    for filename, written in schema.contract_schemas().items():
        assert schema.load_schema(filename) == written, (
            f"run `python -m ci_onnx.contracts.schema` to refresh {filename}"
        )


def manifest() -> Manifest:
    return Manifest(
        schema_version=1,
        model_name="digitnet",
        exporter="dynamo",
        requested_opset=17,
        opset=18,
        ir_version=10,
        precision="fp32",
        files={"model.onnx": "ab" * 32},
        inputs=(TensorSpec("image", ("batch", 1, 8, 8), "float32"),),
        outputs=(TensorSpec("logits", ("batch", 10), "float32"),),
        dynamic_axes={"image": {"0": "batch"}},
        tolerance=Tolerance(),
        tolerance_per_output={"logits": Tolerance(atol=1e-3, rtol=0.0)},
        decision=Decision("logits", 1),
        batch_sizes=(1, 8),
        test_data_sets=(TestDataSet("test_data_set_0", "random", 16),),
        findings=(
            CheckResult(
                "opset", Status.FAILED, "asked for 17, the file has 18", {"requested": 17, "written": 18}
            ),
        ),
        node_count=12,
        op_histogram={"Conv": 3},
        versions={"torch": "2.13.0"},
    )


def result() -> TargetResult:
    target = Target("1.24.1", "openvino", 17, "dynamo", runtime_spec="latest")
    return TargetResult(
        schema_version=RESULT_SCHEMA_VERSION,
        target=target,
        status=Status.FAILED,
        summary="fallback: 31% of node time on CPU (budget 5%)",
        checks=(CheckResult("fallback", Status.FAILED, "too much CPU", {"cpu_time_share": 0.31}, 0.2),),
        parity=(OutputParity("logits", 1e-6, 2e-5, 0, 160, 1e-4, 1e-3),),
        decisions=DecisionStats("logits", 1, 0, 48),
        observation=observation(
            target.id,
            Environment(
                "1.24.1",
                ("OpenVINOExecutionProvider", "CPUExecutionProvider"),
                ("OpenVINOExecutionProvider",),
                "linux-x86_64",
            ),
            placement=Placement(
                "profile",
                {"OpenVINOExecutionProvider": 3, "CPUExecutionProvider": 1},
                {"OpenVINOExecutionProvider": 69.0, "CPUExecutionProvider": 31.0},
                (PlacedNode("n1", "Det", "CPUExecutionProvider", 31.0),),
            ),
            latency=(LatencyStat(8, 1.5, 1.7, float("nan"), 20),),
        ),
    )


@pytest.mark.parametrize(
    ("obj", "schema_file"),
    [
        (manifest(), "manifest.schema.json"),
        (result(), "target-result.schema.json"),
        (Target("1.20.1", "cpu", 17, "dynamo"), "target.schema.json"),
    ],
)
def test_round_trip_and_schema(obj: object, schema_file: str) -> None:
    data = json.loads(serde.dumps(obj))
    jsonschema.validate(data, schema.load_schema(schema_file))
    again = serde.from_json(type(obj), data)
    assert serde.to_json(again) == serde.to_json(obj)


def test_nan_is_written_as_null_and_read_back_as_nan() -> None:
    data = json.loads(serde.dumps(result()))
    assert data["observation"]["latency"][0]["p99_ms"] is None
    p99 = serde.from_json(TargetResult, data).observed.latency[0].p99_ms
    assert p99 != p99


def test_decoding_rejects_unknown_and_missing_keys_and_wrong_types() -> None:
    data = json.loads(serde.dumps(result()))
    with pytest.raises(KeyError, match="unknown keys"):
        serde.from_json(TargetResult, {**data, "surprise": 1})
    del data["status"]
    with pytest.raises(KeyError, match="missing key 'status'"):
        serde.from_json(TargetResult, data)
    with pytest.raises(TypeError, match="expected an integer"):
        serde.from_json(Target, {"runtime": "1.20.1", "provider": "cpu", "opset": "17", "exporter": "dynamo"})
    with pytest.raises(ValueError):
        serde.from_json(TargetResult, {**json.loads(serde.dumps(result())), "status": "green"})


@pytest.mark.parametrize(
    "target_id",
    [
        "ort1.20.1-cpu-op17-dynamo",
        "ort1.24.1-openvino-op18-torchscript-fp16",
        "ort1.32.0-cuda-op21-onnx-int8-static",
        "ort1.15-openvino-op17-dynamo",
    ],
)
def test_ids_parse_back(target_id: str) -> None:
    assert Target.from_id(target_id).id == target_id


@pytest.mark.parametrize(
    "bad",
    [
        "ort-cpu-op17-dynamo",
        "ort1.20.1-cpu-opX-dynamo",
        "ort1.20.1-cpu-op17-onnxscript",
        "1.20.1-cpu-op17-dynamo",
    ],
)
def test_bad_ids_are_usage_errors(bad: str) -> None:
    with pytest.raises(UsageError, match=r"onnx-gate plan` lists the ids|unknown exporter 'onnxscript'"):
        Target.from_id(bad)
