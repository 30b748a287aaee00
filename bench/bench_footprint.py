"""Measure 6: disk footprint of the verify-only environments against the export environment."""

from __future__ import annotations

import sys
from pathlib import Path

from bench import common, harness


def measure(work: Path, ort_version: str) -> list[harness.Section]:
    from bench.prepare import ROOT
    from ci_onnx.host import envs

    uv = envs.find_uv()
    runtime = envs.ensure("onnxruntime", ort_version, work / "cache", uv=uv)
    core = common.venv(work / "venv-core", ["-c", str(ROOT / "constraints.txt"), str(ROOT)], uv)
    export_env = Path(sys.prefix)
    torch_dir = next(iter((export_env / "lib").glob("python3*/site-packages/torch")), None)
    rows = [
        (
            "verify runtime environment: onnxruntime + numpy (what the runner needs; `envs.ensure`)",
            runtime.path,
        ),
        ("onnx-gate installed without extras (CLI, report, verify's parent: adds onnx, jinja2, …)", core),
        ("export environment: this dev venv (`.[dev,export]`: torch, onnxscript, test tools)", export_env),
    ]
    sized = [(name, common.du_mb(path)) for name, path in rows]
    base = sized[0][1]
    lines = ["| environment | size | ratio to the runtime environment |", "|---|---|---|"]
    lines += [f"| {name} | {mb:,.0f} MiB | {mb / base:.1f}× |" for name, mb in sized]
    if torch_dir is not None:
        lines.append(f"| of which torch alone | {common.du_mb(torch_dir):,.0f} MiB | |")
    lines.append(
        "\nSizes are allocated blocks (as `du` counts them), hard links counted once per tree, .pyc files "
        "included (all three are compiled)."
    )
    return [harness.Section("6. Footprint", "\n".join(lines))]
