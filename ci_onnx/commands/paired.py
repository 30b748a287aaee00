"""`onnx-gate verify --baseline`: where the base commit's bundle of this target is, to time it beside.

The reference figure on shared runners is side by side: the verify job times the base commit's
bundle and the head's interleaved, in one process, on one machine. Locally the bundle is a
directory's (an earlier run's ``OUT/bundles``); in a pull request's verify job it is the
``onnx-gate-bundle-<key>`` artifact of the run of the base commit, found as the report job finds the
baseline (ci_onnx/github/artifacts.py). Without one the target is timed alone, and the report
compares its figures with the base's stored ones, saying so.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from ci_onnx.contracts.bundle import MANIFEST
from ci_onnx.contracts.target import Target

GITHUB = "github"


def bundles_dir(value: str, target: Target, out: Path, token: str, say: Callable[[str], None]) -> str:
    """The directory holding ``<bundle key>/`` to pass as ``paired_bundles``; "" for none."""
    if value != GITHUB:
        if not (Path(value) / target.bundle_key / MANIFEST).is_file():
            say(f"--baseline {value}: holds no bundle {target.bundle_key}/; timed alone")
            return ""
        return value
    from ci_onnx.github import artifacts
    from ci_onnx.github.client import Client, GitHubError
    from ci_onnx.github.context import from_env

    ctx = from_env(os.environ, token=token)
    if ctx.pr_number is None or not ctx.base_sha or ctx.repo is None:
        return ""  # not a pull request: nothing to time beside
    if not ctx.token:
        say("no GITHUB_TOKEN to read the base commit's bundle with; timed alone")
        return ""
    dest = out / "baseline" / "bundles"
    try:
        client = Client(ctx.token, ctx.api_url, log=say)
    except GitHubError as exc:
        say(f"{exc.message}; timed alone")
        return ""
    name = f"onnx-gate-bundle-{target.bundle_key}"
    found = artifacts.find(
        client,
        ctx.repo,
        base_sha=ctx.base_sha,
        base_ref=ctx.base_ref,
        dest=dest / target.bundle_key,
        name=name,
    )
    if found.directory is None:
        say(f"{found.note}; timed alone")
        return ""
    say(f"the base bundle: {found.source}, commit {found.commit[:7]}; timed beside this one")
    return str(dest)
