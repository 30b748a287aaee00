"""Run settings and budgets of the verify stage."""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass(frozen=True)
class VerifyOptions:
    """What the config (or the schema's defaults) adds to what the bundle's manifest says."""

    max_cpu_time_share: float = 0.05
    strict_fallback: bool = False
    latency_runs: int = 20
    timeout_s: float = 600.0
    accuracy_drop: float = 1.0
    """budgets.accuracy_drop, in absolute top-1 points against PyTorch (labelled samples only)."""
    session_presets: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    """targets.session_presets: the config's own presets, so a runner can apply one from the plan."""
