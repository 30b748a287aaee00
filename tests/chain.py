"""A chain of equal-sized values with a planted runtime fault: the triage's memory and disk bounds are
measured and tested on it (tests/unit/test_triage_bounds.py, bench/bench_triage_memory.py).

x → Mul by 1 → … → ``down`` (Mul by 1e-39: subnormal activations) → ``up`` (Mul by 1e38) → … → y:
a target whose session flushes denormals (preset ``ftz``) loses the values at ``up``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from ci_onnx.contracts.bundle import TensorSpec
from tests import bundles


def model(nodes: int, width: int) -> onnx.ModelProto:
    """``nodes`` Muls in a chain, each making a (batch, ``width``) float32 value; ``down`` and ``up``
    in the middle."""
    consts = {
        "one": np.array(1.0, np.float32),
        "tiny": np.array(1e-39, np.float32),
        "big": np.array(1e38, np.float32),
    }
    middle = nodes // 2
    made = []
    prev = "x"
    for i in range(nodes):
        name, const = (
            ("down", "tiny") if i == middle - 1 else ("up", "big") if i == middle else (f"n{i}", "one")
        )
        out = "y" if i == nodes - 1 else f"v{i}"
        made.append(helper.make_node("Mul", [prev, const], [out], name=name))
        prev = out
    g = helper.make_graph(
        made,
        "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", width])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", width])],
        [numpy_helper.from_array(v, k) for k, v in consts.items()],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def bundle(directory: Path, nodes: int, width: int, samples: int = 2) -> Path:
    spec = bundles.BundleSpec(
        inputs=(TensorSpec("x", ("batch", width), "float32"),),
        outputs=(TensorSpec("y", ("batch", width), "float32"),),
        dynamic_axes={"x": {"0": "batch"}, "y": {"0": "batch"}},
        batch_sizes=(),
    )

    def reference(feeds: bundles.Feeds) -> list[np.ndarray]:
        return [(feeds["x"] * np.float32(1e-39)) * np.float32(1e38)]

    return bundles.write_bundle(
        directory, model(nodes, width), spec, bundles.random_sets(spec.inputs, samples), reference
    )
