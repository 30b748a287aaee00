"""TargetResults as tests change them: a result carries its runner's Observation, so a figure the
runner measured (latency, placement, serving…) is changed on that observation."""

from __future__ import annotations

import dataclasses
from typing import Any

from ci_onnx.contracts.results import SCHEMA_VERSION, Environment, Observation, TargetResult


def observation(target_id: str, environment: Environment | None = None, **figures: Any) -> Observation:
    return Observation(SCHEMA_VERSION, target_id, environment, **figures)


def observed(result: TargetResult, **figures: Any) -> TargetResult:
    """``result`` with these figures of its observation replaced (one made where it had none)."""
    obs = result.observation or observation(result.target.id)
    return dataclasses.replace(result, observation=dataclasses.replace(obs, **figures))
