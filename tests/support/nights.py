"""Nights of a nightly run, built as `onnx-gate plan` and `onnx-gate verify` would write them.

Figures come from tests.golden.scenarios (made-up test data, seeded), not measurements.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

from ci_onnx import plan as planning
from ci_onnx.contracts.results import TargetResult, write_result
from ci_onnx.contracts.target import Target
from ci_onnx.plan import Plan
from tests.golden import scenarios


def target(version: str, spec: str = "latest", provider: str = "cpu", opset: int = 17) -> Target:
    return Target(version, provider, opset, "dynamo", runtime_spec="" if spec == version else spec)


def result(t: Target, *, fails: bool = False, seed: int = 0) -> TargetResult:
    return scenarios.result_for(t, random.Random(seed), parity_fail=fails)


def write_night(
    root: Path, cells: Sequence[tuple[Target, bool | None]], name: str = "night"
) -> tuple[Path, Path]:
    """Results (``True``: fails, ``False``: passes, ``None``: never reported) and the plan of one night;
    returns (results directory, plan file)."""
    night = root / name
    for t, fails in cells:
        if fails is not None:
            write_result(night / "artifacts" / f"onnx-gate-{t.id}" / "results", result(t, fails=fails))
    the_plan = Plan(1, "onnx-gate.yml", "digitnet", tuple(t for t, _ in cells))
    (night / "plan.json").write_text(planning.to_json(the_plan))
    return night / "artifacts", night / "plan.json"
