"""What every verify check is given: one context in, check results out (the registry: verify/judge.py).

A check is a function ``(Context) -> list[CheckResult]``. It reads the target, the bundle's manifest,
the runner's observation, the decoded evidence, the verify options and what the runner kind can do;
a value more than one check needs (parity's figures) is computed once, kept in ``memo``.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

from ci_onnx import matrix
from ci_onnx.contracts.bundle import Manifest
from ci_onnx.contracts.results import CheckResult, Observation
from ci_onnx.contracts.target import Target
from ci_onnx.contracts.verify_options import VerifyOptions
from ci_onnx.verify.evidence import Evidence


@dataclasses.dataclass(frozen=True)
class Context:
    target: Target
    manifest: Manifest
    obs: Observation
    evidence: Evidence
    options: VerifyOptions
    memo: dict[str, Any] = dataclasses.field(default_factory=dict, compare=False, repr=False)
    """Values more than one check reads (a module's own key: ``parity``), computed once."""

    @functools.cached_property
    def kind(self) -> matrix.Capabilities:
        """What the target's runner kind can do (its ``can`` block in runners.toml)."""
        return matrix.runners()[self.target.runner].can

    @functools.cached_property
    def provider(self) -> matrix.ProviderInfo:
        return matrix.providers()[self.target.provider]


Check = Callable[[Context], list[CheckResult]]


@dataclasses.dataclass(frozen=True)
class Registered:
    """One line of the registry: a check, and what it needs the runner to have observed.

    ``needs``: check family → the key of ``Observation.unmeasured`` a runner declares when it could
    not measure what that family judges; such a check is skipped with the runner's reason instead of
    failing for want of a figure."""

    check: Check
    needs: dict[str, str] = dataclasses.field(default_factory=dict)
