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

from ci_onnx.contracts.bundle import TensorSpec
from ci_onnx.contracts.results import RESULT_SCHEMA_VERSION, CheckResult, TargetResult
from ci_onnx.contracts.target import Status, Target
from ci_onnx.contracts.verify_options import VerifyOptions
from ci_onnx.runners.base import RunnerEnv
from ci_onnx.triage import attach
from ci_onnx.verify import stage
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
    base = TargetResult(RESULT_SCHEMA_VERSION, target(), Status.FAILED, "")
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
    r = TargetResult(
        RESULT_SCHEMA_VERSION,
        web,
        Status.FAILED,
        "parity",
        checks=(CheckResult("parity[y]", Status.FAILED, ""),),
    )
    env = RunnerEnv("web", web.runtime, tmp_path / "no-such-env", str(tmp_path / "no-such-node"))
    # a browser that is not there, named: the same on a machine with Chromium and one without
    no_browser = {"ONNX_GATE_CHROMIUM": str(tmp_path / "no-such-chromium")}
    found = attach.attach(r, None, bundle, tmp_path / "out", environment=env, providers=("wasm",), preset={},
                          timeout_s=60, torch_config="", base_env=no_browser, limits=(1024, 1024))  # fmt: skip
    assert (found.status, found.summary, found.checks) == (r.status, r.summary, r.checks)
    assert found.triage is not None and found.triage.fault is None
    assert "no-such-chromium" in found.triage.stopped, found.triage.stopped


QDQ_SPEC = bundles.BundleSpec(
    inputs=(TensorSpec("x", ("batch", 3, 16, 16), "float32"),),
    outputs=(TensorSpec("y", ("batch", 3, 14, 14), "float32"),),
    dynamic_axes={"x": {"0": "batch"}, "y": {"0": "batch"}},
    batch_sizes=(),
    tolerance=bundles.Tolerance(atol=1e-6, rtol=0.0),
)


def qdq_conv_model() -> onnx.ModelProto:
    """A QDQ Conv (uint8 activations, per-channel int8 weights, int32 bias): onnxruntime's ALL level
    fuses DequantizeLinear → Conv → QuantizeLinear into one QLinearConv whose integer requantization
    lands one quantization step away from what the graph says on some elements."""
    rng = np.random.default_rng(0)
    in_s, w_s, out_s = np.float32(0.001), np.full(3, 0.001, np.float32), np.float32(0.0001)
    wq = np.clip(np.round(rng.standard_normal((3, 3, 3, 3)) / 0.001), -127, 127).astype(np.int8)
    inits = [
        numpy_helper.from_array(wq, "wq"), numpy_helper.from_array(w_s, "w_s"),
        numpy_helper.from_array(np.zeros(3, np.int8), "w_zp"),
        numpy_helper.from_array(np.array([-5123, 123, 5151], np.int32), "bq"),
        numpy_helper.from_array(in_s * w_s, "b_s"), numpy_helper.from_array(np.zeros(3, np.int32), "b_zp"),
        numpy_helper.from_array(np.array(in_s), "in_s"), numpy_helper.from_array(np.array(128, np.uint8), "in_zp"),
        numpy_helper.from_array(np.array(out_s), "out_s"), numpy_helper.from_array(np.array(128, np.uint8), "out_zp"),
    ]  # fmt: skip
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "in_s", "in_zp"], ["xq"], name="q_in"),
        helper.make_node("DequantizeLinear", ["xq", "in_s", "in_zp"], ["xd"], name="dq_in"),
        helper.make_node("DequantizeLinear", ["wq", "w_s", "w_zp"], ["wd"], axis=0, name="dq_w"),
        helper.make_node("DequantizeLinear", ["bq", "b_s", "b_zp"], ["bd"], axis=0, name="dq_b"),
        helper.make_node("Conv", ["xd", "wd", "bd"], ["c"], name="conv"),
        helper.make_node("QuantizeLinear", ["c", "out_s", "out_zp"], ["cq"], name="q_out"),
        helper.make_node("DequantizeLinear", ["cq", "out_s", "out_zp"], ["y"], name="dq_out"),
    ]
    g = helper.make_graph(
        nodes, "qdq_conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3, 14, 14])], inits,
    )  # fmt: skip
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])


def test_a_fusion_that_changes_the_numbers_is_an_optimization_fault_at_the_fused_kernel(
    tmp_path: Path,
) -> None:
    from onnx.reference import ReferenceEvaluator

    model = qdq_conv_model()
    graph_says = ReferenceEvaluator(model)

    def reference(feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        return [graph_says.run(None, feeds)[0]]

    rng = np.random.default_rng(1)
    sets = [{"x": (rng.integers(-128, 128, (4, 3, 16, 16)) * 0.001).astype(np.float32)} for _ in range(2)]
    bundle = bundles.write_bundle(tmp_path / "op21-onnx", model, QDQ_SPEC, sets, reference)
    import onnxruntime

    cell = Target(onnxruntime.__version__, "cpu", 21, "onnx")
    r = stage.verify(bundle, cell, tmp_path / "out", options(120), python=sys.executable, base_env={}).result
    assert r.status is Status.FAILED and r.triage is not None
    t = r.triage
    assert (t.fault, t.op_type) == ("optimization", "QLinearConv"), t
    assert "q_out (QuantizeLinear)" in t.summary and "conv (Conv)" in t.summary, t.summary
    assert any("with optimizations off it matches the reference" in e for e in t.evidence), t.evidence
    assert "the reproduction reproduces it on its own" in t.evidence, (t.evidence, t.notes)
