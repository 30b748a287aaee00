"""Measure 3: start-up. `onnx-gate --help` and `onnx-gate plan` against `python -c "import click"`."""

from __future__ import annotations

import sys
from pathlib import Path

from bench import common, harness

CLICK, HELP, PLAN = (
    'python -c "import click"',
    "onnx-gate --help",
    "onnx-gate plan (3 runtimes × 2 providers)",
)
TARGET_S = 0.3


def small_config(work: Path) -> Path:
    """The example's matrix with pinned runtimes, so that planning asks no package index."""
    from bench.prepare import ROOT

    text = (ROOT / "examples" / "tinycnn" / "onnx-gate.yml").read_text()
    text = text.replace('runtimes: ["1.20.1", latest]', 'runtimes: ["1.20.1", "1.24.1", "1.32.0"]')
    text = text.replace(
        "factory: model.py:build", f"factory: {ROOT / 'examples' / 'tinycnn' / 'model.py'}:build"
    )
    text = text.replace("samples: samples.npz", f"samples: {ROOT / 'examples' / 'tinycnn' / 'samples.npz'}")
    path = work / "pinned" / "onnx-gate.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def measure(work: Path, runs: int) -> list[harness.Section]:
    gate = common.onnx_gate()
    cfg = small_config(work)
    timings = harness.interleaved(
        {
            CLICK: harness.Command((sys.executable, "-c", "import click")),
            HELP: harness.Command((gate, "--help")),
            PLAN: harness.Command((gate, "plan", "--config", str(cfg))),
        },
        runs=runs,
    )
    worst = max(harness.above(timings, HELP, CLICK), harness.above(timings, PLAN, CLICK))
    body = (
        harness.table(timings, CLICK)
        + "\n\n"
        + harness.verdict(
            worst < TARGET_S,
            f"at most {worst * 1000:.0f} ms above `import click`",
            f"under {TARGET_S * 1000:.0f} ms above it",
        )
    )
    return [harness.Section("3. Start-up", body)]
