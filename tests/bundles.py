"""Test bundles in the layout `onnx-gate export` writes, built without the export stage.

Models are made with onnx.helper (or exported from the DigitNet example with torch), inputs are
seeded, and reference outputs are computed with onnxruntime (or torch), then written with
onnx.numpy_helper next to a Manifest whose file hashes come from ci_onnx.contracts.bundle.hash_files.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from ci_onnx.contracts import bundle
from ci_onnx.contracts.bundle import Decision, Manifest, TensorSpec, TestDataSet, Tolerance
from ci_onnx.contracts.results import CheckResult
from ci_onnx.contracts.target import Status

Feeds = dict[str, np.ndarray]
Reference = Callable[[Feeds], list[np.ndarray]]


def mlp(opset: int = 17, batch: int | str = "batch", ir_version: int = 8) -> onnx.ModelProto:
    """x[batch, 8] → MatMul, Add, Relu, MatMul → logits[batch, 4]."""
    rng = np.random.default_rng(1)
    w1 = numpy_helper.from_array(rng.standard_normal((8, 16)).astype(np.float32), "w1")
    b1 = numpy_helper.from_array(rng.standard_normal(16).astype(np.float32), "b1")
    w2 = numpy_helper.from_array(rng.standard_normal((16, 4)).astype(np.float32), "w2")
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h0"], name="fc1"),
        helper.make_node("Add", ["h0", "b1"], ["h1"], name="bias1"),
        helper.make_node("Relu", ["h1"], ["h2"], name="relu1"),
        helper.make_node("MatMul", ["h2", "w2"], ["logits"], name="fc2"),
    ]
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 8])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, 4])],
        [w1, b1, w2],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = ir_version
    return model


def partly_cpu(opset: int = 17) -> onnx.ModelProto:
    """x[batch, 4, 4] → MatMul, Relu, then Det (→ det) and ReduceMax + Hardmax (→ onehot).

    OpenVINO takes MatMul, Relu and ReduceMax; Det and Hardmax fall back to the CPU provider.
    """
    w = numpy_helper.from_array(np.eye(4, dtype=np.float32) * 1.5, "w")
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["m"], name="mm"),
        helper.make_node("Relu", ["m"], ["r"], name="relu"),
        helper.make_node("Det", ["r"], ["det"], name="the_det"),
        helper.make_node("ReduceMax", ["r"], ["s"], name="rmax", axes=[2], keepdims=0),
        helper.make_node("Hardmax", ["s"], ["onehot"], name="the_hardmax", axis=-1),
    ]
    graph = helper.make_graph(
        nodes,
        "partly_cpu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4, 4])],
        [
            helper.make_tensor_value_info("onehot", TensorProto.FLOAT, ["batch", 4]),
            helper.make_tensor_value_info("det", TensorProto.FLOAT, ["batch"]),
        ],
        [w],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def ort_reference(model_path: Path) -> Reference:
    import onnxruntime as ort

    sess = ort.InferenceSession(str(model_path), providers=["CPUExecutionProvider"])
    frozen = any(isinstance(i.shape[0], int) for i in sess.get_inputs())

    def run(feeds: Feeds) -> list[np.ndarray]:
        if not frozen:
            return [np.asarray(o) for o in sess.run(None, feeds)]
        count = next(iter(feeds.values())).shape[0]
        rows = [sess.run(None, {k: v[i : i + 1] for k, v in feeds.items()}) for i in range(count)]
        return [np.concatenate([r[j] for r in rows]) for j in range(len(rows[0]))]

    return run


def random_sets(inputs: Sequence[TensorSpec], count: int, seed: int = 0, samples: int = 0) -> list[Feeds]:
    """test_data_set_0: ``count`` seeded random inputs; test_data_set_1: ``samples`` more, when asked."""
    rng = np.random.default_rng(seed)
    sets = []
    for n in [count, samples] if samples else [count]:
        feeds = {}
        for spec in inputs:
            shape = [n, *[d for d in spec.shape[1:] if isinstance(d, int)]]
            feeds[spec.name] = rng.standard_normal(shape).astype(spec.dtype)
        sets.append(feeds)
    return sets


@dataclasses.dataclass(frozen=True)
class BundleSpec:
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    dynamic_axes: dict[str, dict[str, str]]
    decision: Decision | None = None
    batch_sizes: tuple[int, ...] = (1, 8)
    tolerance: Tolerance = dataclasses.field(default_factory=Tolerance)
    exporter: str = "onnx"
    requested_opset: int | None = None
    findings: tuple[CheckResult, ...] = ()


def write_bundle(
    directory: Path,
    model: onnx.ModelProto,
    spec: BundleSpec,
    sets: list[Feeds],
    reference: Reference | None = None,
    perturb: Callable[[int, int, np.ndarray], np.ndarray] | None = None,
) -> Path:
    """Write a bundle; ``perturb(set_index, output_index, ref)`` edits references before they are written."""
    directory.mkdir(parents=True, exist_ok=True)
    model_path = directory / bundle.MODEL
    onnx.save(model, model_path)
    ref = reference or ort_reference(model_path)
    data_sets = []
    for s, feeds in enumerate(sets):
        ds = directory / f"test_data_set_{s}"
        ds.mkdir(exist_ok=True)
        for i, inp in enumerate(spec.inputs):
            (ds / f"input_{i}.pb").write_bytes(
                numpy_helper.from_array(feeds[inp.name], inp.name).SerializeToString()
            )
        for i, (out, value) in enumerate(zip(spec.outputs, ref(feeds), strict=True)):
            value = perturb(s, i, value) if perturb else value
            (ds / f"output_{i}.pb").write_bytes(numpy_helper.from_array(value, out.name).SerializeToString())
        count = next(iter(feeds.values())).shape[0]
        data_sets.append(TestDataSet(ds.name, "random" if s == 0 else "sample", count))
    opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    findings = spec.findings or (CheckResult("export", Status.PASSED, "written by the test helper"),)
    manifest = Manifest(
        schema_version=bundle.SCHEMA_VERSION,
        model_name=model.graph.name,
        exporter=spec.exporter,
        requested_opset=spec.requested_opset or opset,
        opset=opset,
        ir_version=model.ir_version,
        precision="fp32",
        files=bundle.hash_files(directory),
        inputs=spec.inputs,
        outputs=spec.outputs,
        dynamic_axes=spec.dynamic_axes,
        tolerance=spec.tolerance,
        tolerance_per_output={},
        decision=spec.decision,
        batch_sizes=spec.batch_sizes,
        test_data_sets=tuple(data_sets),
        findings=findings,
        node_count=len(model.graph.node),
        op_histogram=dict(collections.Counter(n.op_type for n in model.graph.node)),
        versions={"onnx": onnx.__version__},
    )
    bundle.write_manifest(directory, manifest)
    return directory


MLP_SPEC = BundleSpec(
    inputs=(TensorSpec("x", ("batch", 8), "float32"),),
    outputs=(TensorSpec("logits", ("batch", 4), "float32"),),
    dynamic_axes={"x": {"0": "batch"}, "logits": {"0": "batch"}},
    decision=Decision("logits", 1),
    batch_sizes=(1, 8),
)

PARTLY_CPU_SPEC = BundleSpec(
    inputs=(TensorSpec("x", ("batch", 4, 4), "float32"),),
    outputs=(TensorSpec("onehot", ("batch", 4), "float32"), TensorSpec("det", ("batch",), "float32")),
    dynamic_axes={"x": {"0": "batch"}},
    batch_sizes=(1, 4),
    tolerance=Tolerance(atol=1e-4, rtol=1e-3),
)


def mlp_bundle(directory: Path, opset: int = 17, doc: str = "", **kwargs: object) -> Path:
    """The MLP's bundle; ``doc``: a doc string that makes its model another file (as another commit's
    export would be), which the verify stage times beside the head's rather than taking for it."""
    model = mlp(opset=opset, ir_version=8 if opset <= 17 else 10)
    model.doc_string = doc
    return write_bundle(directory, model, MLP_SPEC, random_sets(MLP_SPEC.inputs, 16, samples=5), **kwargs)  # type: ignore[arg-type]


def digitnet_bundle(directory: Path, examples: Path) -> Path:
    """The example DigitNet, exported with torch (TorchScript exporter, opset 17), torch references."""
    import importlib.util

    import torch

    spec_ = importlib.util.spec_from_file_location("digitnet_model", examples / "model.py")
    assert spec_ and spec_.loader
    module = importlib.util.module_from_spec(spec_)
    spec_.loader.exec_module(module)
    net = module.build().eval()
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory.parent / f"{directory.name}.export.onnx"
    torch.onnx.export(
        net, (torch.zeros(1, 1, 8, 8),), str(tmp), input_names=["image"], output_names=["logits"],
        dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}}, opset_version=17, dynamo=False,
    )  # fmt: skip
    model = onnx.load(str(tmp))
    tmp.unlink()
    samples = np.load(examples / "samples.npz")
    real = np.asarray(samples[samples.files[0]], dtype=np.float32)
    rng = np.random.default_rng(0)
    random = (rng.standard_normal((16, 1, 8, 8)) * 6.02 + 4.88).astype(np.float32)

    def torch_reference(feeds: Feeds) -> list[np.ndarray]:
        with torch.no_grad():
            return [net(torch.from_numpy(feeds["image"])).numpy()]

    spec = BundleSpec(
        inputs=(TensorSpec("image", ("batch", 1, 8, 8), "float32"),),
        outputs=(TensorSpec("logits", ("batch", 10), "float32"),),
        dynamic_axes={"image": {"0": "batch"}, "logits": {"0": "batch"}},
        decision=Decision("logits", 1),
        batch_sizes=(1, 8, 32),
        exporter="torchscript",
    )
    return write_bundle(directory, model, spec, [{"image": random}, {"image": real}], torch_reference)
