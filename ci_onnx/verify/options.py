"""Run settings and budgets of the verify stage."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class VerifyOptions:
    """What the config (or the schema's defaults) adds to what the bundle's manifest says."""

    max_cpu_time_share: float = 0.05
    strict_fallback: bool = False
    latency_runs: int = 20
    timeout_s: float = 600.0
