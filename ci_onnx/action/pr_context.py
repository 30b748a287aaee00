"""The pull request a report belongs to, when the report runs outside the pull request's own run.

In the fork-safe pair of workflows, the report that posts the comment runs on ``workflow_run``, whose
event names no pull request for a fork. The trusted job reads the number from the untrusted run's
artifact and passes it as ``pull-request`` with the run's ``head-sha``. This asks GitHub that the pull
request is really at that commit (the number is the fork's data), then writes the ``pull_request``
event the report command reads, so the report posts where it belongs and nowhere else.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import MutableMapping
from pathlib import Path

from ci_onnx.contracts.errors import UsageError

_SHA = re.compile(r"^[0-9a-f]{40}$")


def event(
    number: int, head_sha: str, original: dict[str, object], base: dict[str, object] | None = None
) -> dict[str, object]:
    """A minimal ``pull_request`` event payload: the number, the head commit, the repository, and
    the base commit and branch as GitHub answered them (the report reads the base's baseline, whose
    plan is the policy that judges the pull request: never the fork's own)."""
    pull: dict[str, object] = {"number": number, "head": {"sha": head_sha}}
    if base:
        pull["base"] = base
    payload: dict[str, object] = {"action": "synchronize", "number": number, "pull_request": pull}
    if "repository" in original:
        payload["repository"] = original["repository"]
    return payload


def check_head(
    number: int, head_sha: str, token: str, environ: MutableMapping[str, str]
) -> dict[str, object]:
    """Raise UsageError unless pull request ``number`` of this repository is at ``head_sha``; its
    base (commit and branch), as GitHub says."""
    from ci_onnx.github.client import Client, GitHubError

    repo = environ.get("GITHUB_REPOSITORY", "")
    client = Client(token, environ.get("GITHUB_API_URL") or "https://api.github.com")
    try:
        found = client.request("GET", f"/repos/{repo}/pulls/{number}").data
    except GitHubError as exc:
        raise UsageError(
            f"input pull-request: could not read pull request {number} of {repo} ({exc})"
        ) from None
    head = found.get("head", {}).get("sha") if isinstance(found, dict) else None
    if head != head_sha:
        shown = head if isinstance(head, str) and _SHA.match(head) else "another commit"
        raise UsageError(
            f"input pull-request: pull request {number} is at {shown}, not at the run's head {head_sha}; "
            "the artifact names another pull request, so nothing is posted"
        )
    base = found.get("base") if isinstance(found, dict) else None
    if not isinstance(base, dict) or not _SHA.match(str(base.get("sha", ""))):
        return {}
    return {"sha": str(base["sha"]), "ref": str(base.get("ref", ""))}


def apply(pull_request: str, head_sha: str, environ: MutableMapping[str, str], token: str = "") -> None:
    """With ``pull_request`` set, point GITHUB_EVENT_NAME/GITHUB_EVENT_PATH at that pull request,
    once GitHub confirms (with ``token``) that it is at ``head_sha``."""
    if not pull_request and not head_sha:
        return
    if not pull_request.isdigit() or int(pull_request) < 1:
        raise UsageError(f"input pull-request: {pull_request!r} is not a pull request number")
    if not _SHA.match(head_sha):
        raise UsageError(f"input head-sha: {head_sha!r} is not a full 40-character commit sha")
    base = check_head(int(pull_request), head_sha, token, environ) if token else {}
    original: dict[str, object] = {}
    if environ.get("GITHUB_EVENT_PATH"):
        try:
            loaded = json.loads(Path(environ["GITHUB_EVENT_PATH"]).read_text())
            original = loaded if isinstance(loaded, dict) else {}
        except (OSError, ValueError):
            original = {}
    folder = Path(tempfile.mkdtemp(prefix="onnx-gate-event-", dir=environ.get("RUNNER_TEMP") or None))
    path = folder / "event.json"
    path.write_text(json.dumps(event(int(pull_request), head_sha, original, base)))
    environ["GITHUB_EVENT_NAME"] = "pull_request"
    environ["GITHUB_EVENT_PATH"] = str(path)
    environ["GITHUB_SHA"] = head_sha
