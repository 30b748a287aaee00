"""Measure which ONNX element types each onnxruntime release can express (feed, compute, return).

    python scripts/measure_runtime_types.py 1.20.1 1.32.0 … [--cache DIR]

For every release, an environment (uv) with that onnxruntime alone loads small models per element
type: Identity, Cast to and from float, and DequantizeLinear, at each opset the release loads. A type
counts as expressible when one of them loads on the CPU provider and a tensor of that type goes through it
(fed as an OrtValue from raw bits where numpy has no dtype, as the runner feeds it). The types that
never do are printed as ``cannot_express`` for matrix/runtimes.toml. Rerun on a new release.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from onnx import TensorProto, helper

from ci_onnx import matrix
from ci_onnx.contracts import tensorproto

PROBE = r"""
import json, sys
import numpy as np, onnxruntime as ort
from ci_onnx.observer import values
from ci_onnx.contracts.tensorproto import Tensor, storage_dtype, STRING
so = ort.SessionOptions(); so.log_severity_level = 4
ok = {}
for spec in json.loads(sys.argv[1]):
    path, code, in_code = spec
    try:
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        dtype = storage_dtype(in_code)
        arr = np.array([["a", "b"]], dtype=object) if in_code == STRING else np.ones((1, 2), dtype=dtype)
        out = sess.run_with_ort_values(
            None, {"x": values._ortvalue(Tensor("x", in_code, arr), ort)}
        ) if in_code in values.tensorproto.BITS else sess.run(None, {"x": arr})
        ok[path] = True
    except Exception as exc:
        ok[path] = str(exc).splitlines()[0][:160]
print(json.dumps({"version": ort.__version__, "ok": ok}))
"""


def model(op: str, x: int, y: int, opset: int, ir: int) -> bytes:
    attrs = {"to": y} if op == "Cast" else {}
    inputs = ["x", "scale"] if op == "DequantizeLinear" else ["x"]
    scale = [helper.make_tensor("scale", TensorProto.FLOAT, [], [1.0])] if op == "DequantizeLinear" else []
    graph = helper.make_graph(
        [helper.make_node(op, inputs, ["y"], **attrs)],
        "probe",
        [helper.make_tensor_value_info("x", x, [1, 2])],
        [helper.make_tensor_value_info("y", y, [1, 2])],
        initializer=scale,
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = ir
    return m.SerializeToString()


def probes(work: Path, caps: matrix.RuntimeCaps) -> dict[int, list[tuple[str, int, int]]]:
    out: dict[int, list[tuple[str, int, int]]] = {}
    opsets = sorted({o for o in (13, 19, 21, 23, 25, caps.max_opset) if o <= caps.max_opset}, reverse=True)
    for code in tensorproto.NAMES:
        for opset in opsets:
            for op, x, y in (
                ("Identity", code, code),
                ("Cast", code, TensorProto.FLOAT),
                ("Cast", TensorProto.FLOAT, code),
                ("DequantizeLinear", code, TensorProto.FLOAT),
            ):
                path = work / f"{code}-{op}-{x}-{y}-op{opset}.onnx"
                path.write_bytes(model(op, x, y, opset, min(caps.max_ir, 10 if opset <= 21 else caps.max_ir)))
                out.setdefault(code, []).append((str(path), code, x))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("versions", nargs="+")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "ort-caps")
    parser.add_argument("--python", help="use this interpreter (holding one onnxruntime) instead of an env")
    args = parser.parse_args()
    package_root = Path(__file__).resolve().parents[1]
    for version in args.versions:
        work = Path(tempfile.mkdtemp())
        by_type = probes(work, matrix.caps_for(version))
        python = Path(args.python) if args.python else args.cache / version / "bin" / "python"
        if not python.exists():
            env = args.cache / version
            subprocess.run(["uv", "venv", "-q", "--python", sys.executable, str(env)], check=True)
            numpy = "numpy<2" if tuple(map(int, version.split(".")[:2])) < (1, 19) else "numpy"
            subprocess.run(
                ["uv", "pip", "install", "-q", "--python", str(python), f"onnxruntime=={version}", numpy],
                check=True,
            )
        specs = [s for items in by_type.values() for s in items]
        done = subprocess.run(
            [str(python), "-c", PROBE, json.dumps(specs)],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONPATH": str(package_root), "PATH": "/usr/bin:/bin"},
        )
        result = json.loads(done.stdout)
        cannot = [
            tensorproto.NAMES[c]
            for c, items in by_type.items()
            if not any(result["ok"][p] is True for p, *_ in items)
        ]
        minor = ".".join(version.split(".")[:2])
        print(
            f'[runtimes."{minor}"]  # {result["version"]}\ncannot_express = {json.dumps(cannot)}\n',
            flush=True,
        )


if __name__ == "__main__":
    main()
