"""The judge on hand-made observations: every check's verdict without running a runtime."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from ci_onnx.contracts import bundle, tensorproto
from ci_onnx.contracts.bundle import Manifest
from ci_onnx.contracts.results import SCHEMA_VERSION, Environment, Observation, PlacedNode, Placement
from ci_onnx.contracts.target import Status, Target
from ci_onnx.contracts.verify_options import VerifyOptions
from ci_onnx.verify import evidence, judge
from tests import bundles

CPU, OV = "CPUExecutionProvider", "OpenVINOExecutionProvider"
TARGET = Target("1.24.1", "openvino", 17, "onnx")


@pytest.fixture(scope="module")
def mlp(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Manifest]:
    b = bundles.mlp_bundle(tmp_path_factory.mktemp("b") / "mlp")
    manifest = bundle.read_manifest(b)
    _, ref = tensorproto.load(b / "test_data_set_0" / "output_0.pb")
    (b / "batch_1").mkdir()
    tensorproto.save(b / "batch_1" / "output_0.pb", ref[:1], "logits")  # what one run of batch 1 gave
    return b, manifest


def observed(manifest: Manifest, **changes: object) -> Observation:
    """An observation whose outputs are the bundle's own references (so parity holds)."""
    obs = Observation(
        SCHEMA_VERSION,
        TARGET.id,
        Environment("1.24.1", (OV, CPU), (OV, CPU), "Linux"),
        outputs={ds.directory: {"logits": f"{ds.directory}/output_0.pb"} for ds in manifest.test_data_sets},
        batch_outputs={"1": {"logits": "batch_1/output_0.pb"}},
        batch_reference={"logits": "test_data_set_0/output_0.pb"},
        batch_errors={"8": "the batch axis of input 'x' is fixed at 1 in the model"},
        placement=Placement(
            "profile", {OV: 3, CPU: 1}, {OV: 90.0, CPU: 10.0}, (PlacedNode("det", "Det", CPU, 10.0),)
        ),
    )
    return dataclasses.replace(obs, **changes)  # type: ignore[arg-type]


def verdicts(mlp: tuple[Path, Manifest], obs: Observation, **kw: object) -> dict[str, Status]:
    b, manifest = mlp
    result = judge.judge(TARGET, manifest, obs, evidence.load(manifest, obs, b, b), VerifyOptions(**kw))  # type: ignore[arg-type]
    return {c.name: c.status for c in result.checks} | {"(target)": result.status}


def test_checks_in_order_with_their_verdicts(mlp: tuple[Path, Manifest]) -> None:
    v = verdicts(mlp, observed(mlp[1]), max_cpu_time_share=0.2)
    assert v == {
        "export": Status.PASSED,
        "load": Status.PASSED,
        "provider": Status.PASSED,
        "parity[logits]": Status.PASSED,
        "decision": Status.PASSED,
        "batch[1]": Status.PASSED,
        "batch[8]": Status.FAILED,
        "fallback": Status.PASSED,
        "latency": Status.SKIPPED,
        "memory": Status.SKIPPED,
        "(target)": Status.FAILED,
    }


def test_fallback_budget_strict_mode_and_unknown_placement(mlp: tuple[Path, Manifest]) -> None:
    m = mlp[1]
    assert verdicts(mlp, observed(m), max_cpu_time_share=0.05)["fallback"] == Status.FAILED
    assert (
        verdicts(mlp, observed(m), max_cpu_time_share=0.5, strict_fallback=True)["fallback"] == Status.FAILED
    )
    refused = observed(m, strict_fallback_error="fallback to CPU EP has been explicitly disabled")
    assert verdicts(mlp, refused, max_cpu_time_share=0.5)["fallback"] == Status.FAILED
    unknown = observed(m, placement=None, placement_error="profiling failed")
    assert verdicts(mlp, unknown)["fallback"] == Status.ERROR


def test_load_failure_is_expected_only_when_the_plan_said_so(mlp: tuple[Path, Manifest]) -> None:
    b, manifest = mlp
    obs = observed(manifest, load_error="Unsupported model IR version: 10")
    failed = judge.judge(TARGET, manifest, obs, evidence.load(manifest, obs, b, b), VerifyOptions())
    assert failed.status == Status.FAILED and failed.summary == "load: Unsupported model IR version: 10"
    assert [c.name for c in failed.checks] == ["export", "load"]
    expected = judge.judge(
        TARGET,
        manifest,
        obs,
        evidence.load(manifest, obs, b, b),
        VerifyOptions(),
        expected_skip="opset too new",
    )
    assert expected.status == Status.EXPECTED
    assert expected.summary == "load: opset too new; the runtime says: Unsupported model IR version: 10"


def test_missing_provider_and_failed_runs(mlp: tuple[Path, Manifest]) -> None:
    m = mlp[1]
    on_cpu = observed(m, environment=Environment("1.24.1", (CPU,), (CPU,), "Linux"))
    assert verdicts(mlp, on_cpu)["provider"] == Status.FAILED
    run_failed = observed(m, run_errors={"test_data_set_1": "bad input"}, outputs={})
    assert verdicts(mlp, run_failed)["parity[logits]"] == Status.FAILED
    other_runtime = observed(m, environment=Environment("1.32.0", (OV, CPU), (OV, CPU), "Linux"))
    assert verdicts(mlp, other_runtime)["runtime"] == Status.ERROR


def test_a_batch_that_differs_from_single_runs_fails(mlp: tuple[Path, Manifest], tmp_path: Path) -> None:
    b, manifest = mlp
    _, ref = tensorproto.load(b / "test_data_set_0" / "output_0.pb")
    tensorproto.save(tmp_path / "batch.pb", ref[:1] + 0.5, "logits")
    tensorproto.save(tmp_path / "single.pb", ref, "logits")
    obs = observed(
        manifest,
        batch_outputs={"1": {"logits": str(tmp_path / "batch.pb")}},
        batch_reference={"logits": str(tmp_path / "single.pb")},
    )
    result = judge.judge(TARGET, manifest, obs, evidence.load(manifest, obs, b, b), VerifyOptions())
    check = result.check("batch[1]")
    assert check is not None and check.status == Status.FAILED
    assert check.message.startswith(
        "batch 1 differs from 1 single runs: logits: 4 of 4 elements out of tolerance"
    )
