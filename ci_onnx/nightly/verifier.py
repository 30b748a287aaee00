"""Verify a family's bundle on one more release, for the search: an environment per release.

This is the one piece of the nightly run that installs anything (through the runner kinds, the same
cached environments `onnx-gate run` uses). Everything else codes against ``bisect.VerifyAt``, so the search is
tested with fakes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path

from ci_onnx import matrix
from ci_onnx.contracts.target import Status, Target
from ci_onnx.contracts.verify_options import VerifyOptions
from ci_onnx.nightly.bisect import VerifyAt
from ci_onnx.nightly.families import FamilyNight
from ci_onnx.nightly.night import VerifierFor


@dataclasses.dataclass(frozen=True)
class EnvVerifier:
    """``verify_at`` for one family: its bundle, verified on ``version`` in that release's environment."""

    target: Target
    bundles: Path
    work: Path
    cache_dir: Path
    options: VerifyOptions
    base_env: Mapping[str, str]
    uv: str | None = None

    def __call__(self, version: str) -> Status:
        from ci_onnx.runners.base import Provisioning, provision
        from ci_onnx.verify import job

        t = dataclasses.replace(self.target, runtime=version, runtime_spec="")
        how = Provisioning(self.cache_dir, self.base_env, self.uv)
        options = dataclasses.replace(
            self.options, triage_timeout_s=0
        )  # a bisection needs verdicts, not triages
        found = job.verify_groups(
            [job.Group([(self.bundles / t.bundle_key, t)], options)],
            self.work / "bisect" / version,
            environment=lambda target: provision(target, how),
            base_env=self.base_env,
            record_errors=False,  # what stops it is the search's to say
        )[t.id]
        if isinstance(found, Exception):
            raise found
        return found.result.status


def for_family(
    bundles: Path | None,
    work: Path,
    cache_dir: Path,
    options: VerifyOptions | Callable[[Target], VerifyOptions],
    base_env: Mapping[str, str],
    uv: str | None = None,
) -> VerifierFor:
    """A ``VerifierFor``: an EnvVerifier for families this machine can verify (those the Linux
    container serves: no GPU here); None for the rest, whose answer stays a range. ``options``: the
    settings, or each target's model's (a config of several models)."""

    def make(fam: FamilyNight) -> VerifyAt | None:
        info = matrix.providers().get(fam.key.provider)
        if bundles is None or info is None or not info.container:
            return None
        target = fam.failing[0].target
        settings = options if isinstance(options, VerifyOptions) else options(target)
        return EnvVerifier(target, bundles, work, cache_dir, settings, base_env, uv)

    return make
