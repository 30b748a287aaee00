"""The fp16 block list: an RMS norm overflows fp16 without it and keeps its figures with it.

The graphs are run by onnx's reference evaluator, which computes in the declared types as an fp16
provider (CUDA, DirectML) does: onnxruntime's CPU provider has no fp16 kernel for these ops and casts
them back to fp32 itself, which would hide the overflow.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ci_onnx.export import precision

pytestmark = pytest.mark.e2e


def rms_norm(path: Path) -> None:
    """y = x / sqrt(mean(x²)): x² overflows fp16 (max 65504) once |x| > 256."""
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [
            helper.make_node("Pow", ["x", "two"], ["sq"]),
            helper.make_node("ReduceMean", ["sq"], ["ms"], axes=[-1], keepdims=1),
            helper.make_node("Sqrt", ["ms"], ["rms"]),
            helper.make_node("Div", ["x", "rms"], ["y"]),
        ],
        "rms",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 16])],
        [helper.make_tensor("two", TensorProto.FLOAT, [], [2.0])],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))


def run(path: Path, x: np.ndarray) -> np.ndarray:
    import onnx
    from onnx.reference import ReferenceEvaluator

    model = onnx.load(str(path))
    known = {i.name for i in model.graph.input} | {t.name for t in model.graph.initializer}
    pending, ordered = list(model.graph.node), []
    while pending:  # the converter appends its Casts at the end; the evaluator wants graph order
        ready = next(n for n in pending if all(i in known or not i for i in n.input))
        pending.remove(ready)
        ordered.append(ready)
        known |= set(ready.output)
    del model.graph.node[:]
    model.graph.node.extend(ordered)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(ReferenceEvaluator(model).run(None, {"x": x})[0])


def test_the_block_list_keeps_what_overflows_fp16_in_fp32(tmp_path: Path) -> None:
    source = tmp_path / "fp32.onnx"
    rms_norm(source)
    x = np.random.default_rng(0).normal(scale=1000.0, size=(4, 16)).astype(np.float32)
    reference = run(source, x)
    assert np.isfinite(reference).all()

    bare = tmp_path / "bare.onnx"
    precision.to_fp16(source, bare, {})
    broken = run(bare, x)
    assert not np.isfinite(broken).all() or not np.allclose(broken, reference, atol=1e-2, rtol=1e-2)

    blocked = tmp_path / "blocked.onnx"
    said = precision.to_fp16(source, blocked, precision.FP16_BLOCKED)
    assert "Pow" in said and "ReduceMean" in said and "Sqrt" in said
    np.testing.assert_allclose(run(blocked, x), reference, atol=1e-2, rtol=1e-2)
