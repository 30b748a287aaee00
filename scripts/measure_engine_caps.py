"""Measure which opsets and IR versions an engine kind's release loads (openvino, tract).

    python scripts/measure_engine_caps.py PYTHON_OF_THE_ENGINES_ENVIRONMENT openvino|tract

One-node models (Relu) stamped with each opset from 7 to the installed onnx's newest and each IR
version from 3 to its newest are written to a temporary folder and loaded by the engine in its own
environment (the interpreter given: `onnx-gate run` caches one per release). It prints the highest
that load and any that do not; matrix/runners.toml's comment on the kind says what was found.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import onnx
from onnx import TensorProto, helper

PROBES = {
    "openvino": (
        "import openvino as ov\ncore = ov.Core()\n"
        "load = lambda p: core.compile_model(core.read_model(p), 'CPU')"
    ),
    "tract": "import tract\nload = lambda p: tract.onnx().load(p).into_model().into_runnable()",
}
RUN = r"""
import json, sys
ok = {}
for path in sys.argv[1:]:
    try:
        load(path)
        ok[path] = True
    except Exception as exc:
        ok[path] = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
print(json.dumps(ok))
"""


def model(opset: int, ir: int) -> bytes:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "probe", [x], [y])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = ir
    return m.SerializeToString()


def main(argv: list[str]) -> int:
    python, engine = argv
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for opset in range(7, onnx.defs.onnx_opset_version() + 1):
            for ir in range(3, onnx.IR_VERSION + 1):
                path = Path(tmp) / f"op{opset}-ir{ir}.onnx"
                path.write_bytes(model(opset, ir))
                paths[str(path)] = (opset, ir)
        done = subprocess.run(
            [python, "-c", PROBES[engine] + RUN, *paths], capture_output=True, text=True, check=True
        )
        ok = json.loads(done.stdout.strip().splitlines()[-1])
    loaded = [paths[p] for p, v in ok.items() if v is True]
    refused = {f"op{paths[p][0]} ir{paths[p][1]}": v for p, v in ok.items() if v is not True}
    print(f"{engine}: {len(loaded)} of {len(ok)} load; highest opset {max(o for o, _ in loaded)}, "
          f"highest IR {max(i for _, i in loaded)} (onnx {onnx.__version__} writes up to opset "
          f"{onnx.defs.onnx_opset_version()}, IR {onnx.IR_VERSION})")  # fmt: skip
    for what, why in list(refused.items())[:20]:
        print(f"  refused {what}: {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
