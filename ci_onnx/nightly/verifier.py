"""Verify a family's bundle on one more release, for the search: an environment per release.

This is the one piece of the nightly run that installs anything, and the only one that needs the
verify stage (``ci_onnx.envs`` and ``ci_onnx.verify``), imported when a release is verified. Everything
else codes against ``bisect.VerifyAt``, so the search is tested with fakes.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
from pathlib import Path
from typing import Any

from ci_onnx import matrix
from ci_onnx.errors import EnvironmentProblem
from ci_onnx.nightly.bisect import VerifyAt
from ci_onnx.nightly.families import FamilyNight
from ci_onnx.nightly.night import VerifierFor
from ci_onnx.target import Status, Target


@dataclasses.dataclass(frozen=True)
class EnvVerifier:
    """``verify_at`` for one family: its bundle, verified on ``version`` in a fresh environment."""

    target: Target
    bundles: Path
    work: Path
    options: Any
    """The verify stage's options (tolerances, decision, batch sizes), built from the config."""

    def __call__(self, version: str) -> Status:
        try:
            # by name: the verify stage is built beside this module, and typed there
            envs = importlib.import_module("ci_onnx.envs")
            stage = importlib.import_module("ci_onnx.verify.stage")
        except ImportError:
            raise EnvironmentProblem(
                "this onnx-gate cannot verify other releases (no verify stage); bisect over the "
                "night's results only"
            ) from None
        t = dataclasses.replace(self.target, runtime=version, runtime_spec="")
        env = envs.for_target(t, self.work / "envs")
        written = stage.verify(
            self.bundles / t.bundle_key, t, self.work / "bisect" / version, self.options, python=env.python
        )
        return Status(written.result.status)


def available() -> bool:
    """Whether this onnx-gate has the verify stage (without it, no verifier: a range, not an error)."""
    try:
        return all(importlib.util.find_spec(m) for m in ("ci_onnx.envs", "ci_onnx.verify.stage"))
    except ImportError:
        return False


def for_family(bundles: Path | None, work: Path, options: Any) -> VerifierFor:
    """A ``VerifierFor``: an EnvVerifier for families this machine can verify (those the Linux
    container serves: no GPU here); None for the rest, whose answer stays a range."""
    usable = bundles is not None and available()

    def make(fam: FamilyNight) -> VerifyAt | None:
        info = matrix.providers().get(fam.key.provider)
        if bundles is None or not usable or info is None or not info.container:
            return None
        return EnvVerifier(fam.failing[0].target, bundles, work, options)

    return make
