"""Triage as verify runs it, on small ONNX-only bundles and this interpreter's onnxruntime: which
check it takes, what it finds, and that neither its findings nor its failures change a verdict."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from ci_onnx.bundle import TensorSpec
from ci_onnx.results import CheckResult, TargetResult
from ci_onnx.runners.base import RunnerEnv
from ci_onnx.target import Status, Target
from ci_onnx.triage import attach
from ci_onnx.verify import stage
from ci_onnx.verify.options import VerifyOptions
from tests import bundles

SPEC = bundles.BundleSpec(
    inputs=(TensorSpec("x", ("batch", 16), "float32"),),
    outputs=(TensorSpec("y", ("batch", 16), "float32"),),
    dynamic_axes={"x": {"0": "batch"}, "y": {"0": "batch"}},
    batch_sizes=(),
)


def denormal_model() -> onnx.ModelProto:
    """x → Mul by 1e-39 (subnormal activations) → Mul by 1e38 → y."""
    tiny = numpy_helper.from_array(np.array(1e-39, np.float32), "tiny")
    big = numpy_helper.from_array(np.array(1e38, np.float32), "big")
    g = helper.make_graph(
        [helper.make_node("Mul", ["x", "tiny"], ["t"], name="down"), helper.make_node("Mul", ["t", "big"], ["y"], name="up")],
        "denormal",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 16])],
        [tiny, big],
    )  # fmt: skip
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def numpy_reference(feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    return [(feeds["x"] * np.float32(1e-39)) * np.float32(1e38)]


def verified(tmp_path: Path, target: Target, options: VerifyOptions) -> TargetResult:
    bundle = bundles.write_bundle(
        tmp_path / "op17-onnx", denormal_model(), SPEC, bundles.random_sets(SPEC.inputs, 8), numpy_reference
    )
    return stage.verify(bundle, target, tmp_path / "out", options, python=sys.executable, base_env={}).result


def options(timeout: float) -> VerifyOptions:
    return VerifyOptions(latency_runs=1, serving_figures=False, triage_timeout_s=timeout)


def target() -> Target:
    import onnxruntime

    return Target(onnxruntime.__version__, "cpu", 17, "onnx", session_options="ftz")  # denormals flushed


def test_flushed_denormals_are_triaged_as_a_runtime_fault_at_the_mul_that_reads_them(tmp_path: Path) -> None:
    r = verified(tmp_path, target(), options(120))
    assert r.status is Status.FAILED and r.triage is not None
    t = r.triage
    assert (t.fault, t.node, t.op_type, t.check) == ("runtime", "up", "Mul", "parity[y]"), t
    assert t.reproduction == f"triage/{target().id}" and 0 < t.reproduction_bytes < 10_000
    assert "the reproduction reproduces it on its own" in t.evidence
    assert any("no model factory" in n for n in t.notes)  # ONNX-only: the bundle's outputs stand for torch
    written = json.loads((tmp_path / "out" / "results" / f"{target().id}.json").read_text())
    assert written["triage"]["fault"] == "runtime"


def test_a_triage_out_of_time_says_so_and_leaves_the_verdict_as_it_was(tmp_path: Path) -> None:
    untriaged = verified(tmp_path / "a", target(), options(0))
    assert untriaged.triage is None
    short = verified(tmp_path / "b", target(), options(0.5))
    assert short.triage is not None and short.triage.fault is None
    assert "verify.triage_timeout_s (0.5 s) ran out" in short.triage.stopped
    assert (short.status, short.summary) == (untriaged.status, untriaged.summary)
    assert [(c.name, c.status) for c in short.checks] == [(c.name, c.status) for c in untriaged.checks]


def test_the_check_triaged_is_the_first_failing_parity_or_decision() -> None:
    manifest = None  # without a manifest, a decision has no output to name
    base = TargetResult(1, target(), Status.FAILED, "")
    fail = lambda name, figures=None: CheckResult(name, Status.FAILED, "", figures or {})  # noqa: E731
    assert attach.failing_check(dataclasses.replace(base, checks=(fail("fallback"),)), manifest) is None
    assert attach.failing_check(dataclasses.replace(base, checks=(fail("parity[y]"),)), manifest) == (
        "parity[y]",
        "y",
    )
    ref = fail("reference-parity", {"onnxruntime": "1.32.0", "test_data_set_0/y": {"out_of_tolerance": 3}})
    assert attach.failing_check(dataclasses.replace(base, checks=(ref,)), manifest) == (
        "reference-parity",
        "y",
    )


def test_a_runner_that_cannot_start_stops_the_triage_with_its_reason_and_not_the_verdict(
    tmp_path: Path,
) -> None:
    bundle = bundles.write_bundle(
        tmp_path / "op17-onnx", denormal_model(), SPEC, bundles.random_sets(SPEC.inputs, 4), numpy_reference
    )
    web = dataclasses.replace(target(), runner="web", provider="wasm", session_options="default")
    r = TargetResult(1, web, Status.FAILED, "parity", checks=(CheckResult("parity[y]", Status.FAILED, ""),))
    env = RunnerEnv("web", web.runtime, tmp_path / "no-such-env", str(tmp_path / "no-such-node"))
    found = attach.attach(r, None, bundle, tmp_path / "out", environment=env, providers=("wasm",), preset={},
                          timeout_s=60, torch_config="", base_env={})  # fmt: skip
    assert (found.status, found.summary, found.checks) == (r.status, r.summary, r.checks)
    assert found.triage is not None and found.triage.fault is None
    assert "cannot start" in found.triage.stopped, found.triage.stopped
