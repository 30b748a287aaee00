"""What one triage is asked to do, and its time budget: every child it starts gets what is left."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ci_onnx.contracts.target import Target


@dataclasses.dataclass(frozen=True)
class Request:
    bundle: Path
    target: Target
    check: str
    """``parity[<output>]``, ``decision`` or the bundle's ``reference-parity``."""
    output: str
    out_dir: Path
    """The run's output folder: the reproduction goes to ``triage/<target id>/`` in it."""
    python: str
    """The program of the target's environment (its interpreter for the python kind)."""
    providers: tuple[str, ...]
    preset: dict[str, Any]
    release: str
    base_env: Mapping[str, str]
    timeout_s: float
    torch_config: str = ""
    kind: str = "python"
    env_path: str = ""
    """The target's environment (a venv, an npm prefix), for a kind other than python."""
    env_package: str = ""
    memory_mb: float = 1024.0
    """verify.triage_memory_mb: what the values compared may take in memory."""
    disk_mb: float = 1024.0
    """verify.triage_disk_mb: what the target's values may take on disk."""


class Stop(Exception):
    """The triage cannot go on; the message is its ``stopped`` reason."""


@dataclasses.dataclass
class Budget:
    timeout_s: float
    started: float = dataclasses.field(default_factory=time.monotonic)

    def left(self) -> float:
        """Seconds left for the next child; Stop when they are spent."""
        left = self.timeout_s - (time.monotonic() - self.started)
        if left <= 1:
            raise Stop(f"verify.triage_timeout_s ({self.timeout_s:g} s) ran out")
        return left

    def spent(self) -> float:
        return round(time.monotonic() - self.started, 3)
