"""One tracking issue per subject (the nightly run's), found by a hidden marker, edited in place.

The nightly run against new runtime releases reuses the client and the renderer: it renders its body
with ci_onnx.report.render and keeps one open issue up to date here, closing it when all is well.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from ci_onnx.github.client import Ambiguous, Client
from ci_onnx.github.context import Repo


@dataclasses.dataclass(frozen=True)
class IssueResult:
    number: int
    url: str
    action: str
    """``created``, ``updated`` or ``closed``."""


CREATE_ATTEMPTS = 3


def find_open(client: Client, repo: Repo, marker: str, label: str = "") -> dict[str, Any] | None:
    """The oldest open issue (not pull request) whose body carries ``marker``."""
    params = {"state": "open", "sort": "created", "direction": "asc", **({"labels": label} if label else {})}
    for issue in client.paginate(f"{repo.path}/issues", params):
        if isinstance(issue, dict) and "pull_request" not in issue and marker in (issue.get("body") or ""):
            return issue
    return None


def upsert(
    client: Client, repo: Repo, *, title: str, body: str, marker: str, labels: Sequence[str] = ()
) -> IssueResult:
    """Edit the open issue that carries ``marker``, or open one."""
    if marker not in body:
        raise ValueError("the body must carry the marker, or the next run cannot find the issue")
    found = find_open(client, repo, marker, labels[0] if labels else "")
    if found is not None:
        data = client.request(
            "PATCH", f"{repo.path}/issues/{found['number']}", json={"title": title, "body": body}
        ).data
        return IssueResult(int(data["number"]), str(data.get("html_url", "")), "updated")
    payload: dict[str, Any] = {"title": title, "body": body}
    if labels:
        payload["labels"] = list(labels)
    for attempt in range(1, CREATE_ATTEMPTS + 1):
        try:
            data = client.request("POST", f"{repo.path}/issues", json=payload).data
            return IssueResult(int(data["number"]), str(data.get("html_url", "")), "created")
        except Ambiguous:  # GitHub may have opened it: look before opening another
            found = find_open(client, repo, marker, labels[0] if labels else "")
            if found is not None:
                return IssueResult(int(found["number"]), str(found.get("html_url", "")), "created")
            if attempt == CREATE_ATTEMPTS:
                raise
    raise AssertionError("unreachable: the last attempt returns or raises")


def close(client: Client, repo: Repo, *, marker: str, body: str = "", label: str = "") -> IssueResult | None:
    """Close the open issue that carries ``marker`` (a fixed state), editing its body first if given."""
    found = find_open(client, repo, marker, label)
    if found is None:
        return None
    payload: dict[str, Any] = {"state": "closed", "state_reason": "completed"}
    if body:
        payload["body"] = body
    data = client.request("PATCH", f"{repo.path}/issues/{found['number']}", json=payload).data
    return IssueResult(int(data["number"]), str(data.get("html_url", "")), "closed")
