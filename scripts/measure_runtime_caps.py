"""Measure what each onnxruntime release loads: the highest opset and IR version.

    python scripts/measure_runtime_caps.py 1.15.1 1.16.3 … [--cache DIR]

For every release, a fresh environment (uv) with that onnxruntime alone loads one-node models stamped
with each opset and IR version; the highest that load are printed as TOML rows for
matrix/runtimes.toml. Run it when a new release appears.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import onnx
from onnx import TensorProto, helper

PROBE = r"""
import json, sys, onnxruntime as ort
ok = {}
for path in sys.argv[1:]:
    try:
        ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        ok[path] = True
    except Exception as exc:
        ok[path] = str(exc).splitlines()[0][:200]
print(json.dumps({"version": ort.__version__, "ok": ok}))
"""


def model(opset: int, ir: int) -> bytes:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "probe", [x], [y])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = ir
    return m.SerializeToString()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("versions", nargs="+")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "ort-caps")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp())
    opsets, irs = range(13, onnx.defs.onnx_opset_version() + 1), range(7, onnx.IR_VERSION + 1)
    files = {}
    for opset in opsets:
        files[("opset", opset)] = work / f"op{opset}.onnx"
        files[("opset", opset)].write_bytes(model(opset, 8))
    for ir in irs:
        files[("ir", ir)] = work / f"ir{ir}.onnx"
        files[("ir", ir)].write_bytes(model(13, ir))
    for version in args.versions:
        env = args.cache / version
        python = env / "bin" / "python"
        if not python.exists():
            subprocess.run(["uv", "venv", "-q", "--python", sys.executable, str(env)], check=True)
            numpy = "numpy<2" if tuple(map(int, version.split(".")[:2])) < (1, 19) else "numpy"
            subprocess.run(
                ["uv", "pip", "install", "-q", "--python", str(python), f"onnxruntime=={version}", numpy],
                check=True,
            )
        out = subprocess.run(
            [str(python), "-c", PROBE, *map(str, files.values())], capture_output=True, text=True, check=True
        )
        ok = json.loads(out.stdout)["ok"]
        loads = {key: ok[str(path)] is True for key, path in files.items()}
        max_opset = max(o for (kind, o), good in loads.items() if kind == "opset" and good)
        max_ir = max(i for (kind, i), good in loads.items() if kind == "ir" and good)
        minor = ".".join(version.split(".")[:2])
        print(f'[runtimes."{minor}"]  # {version}\nmax_opset = {max_opset}\nmax_ir = {max_ir}\n', flush=True)


if __name__ == "__main__":
    main()
