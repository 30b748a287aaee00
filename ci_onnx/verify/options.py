"""Run settings and budgets of the verify stage."""

from __future__ import annotations

import dataclasses
from typing import Any

from ci_onnx import defaults


def _from_config(key: str, kind: type) -> Any:
    """A field whose default is onnx-gate.yml's ``key`` (the config schema declares it)."""
    return dataclasses.field(default=kind(defaults.of(key)), metadata={"config": key})


@dataclasses.dataclass(frozen=True)
class VerifyOptions:
    """What the config (or the schema's defaults) adds to what the bundle's manifest says."""

    max_cpu_time_share: float = _from_config("budgets.cpu_fallback.max_time_share", float)
    strict_fallback: bool = _from_config("verify.strict_fallback", bool)
    latency_runs: int = _from_config("verify.latency_runs", int)
    timeout_s: float = _from_config("verify.timeout_s", float)
    accuracy_drop: float = _from_config("budgets.accuracy_drop", float)
    """budgets.accuracy_drop, in absolute top-1 points against PyTorch (labelled samples only)."""
    session_presets: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    """targets.session_presets: the config's own presets, so a runner can apply one from the plan."""
