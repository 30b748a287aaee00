"""Carry a night's decisions out on GitHub: one listing of open issues, then one call or two per family.

The open issues are listed once (not once per family) and matched by the hidden marker alone: labels
help people filter, but a token may not be allowed to set them, so finding an issue never depends on
one. Pull requests are never taken for tracking issues. A failure on one family does not stop the
others; the errors are returned, and the command exits 3 when there are any.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from typing import Any

from ci_onnx.github.client import Client, GitHubError
from ci_onnx.github.context import Repo
from ci_onnx.nightly.night import Action, Kind, OpenIssue

_MARKER = re.compile(r"<!-- onnx-gate:nightly:(\S+) -->")
Say = Callable[[str], None]


def open_tracking_issues(client: Client, repo: Repo) -> dict[str, OpenIssue]:
    """The open tracking issues by family id; the oldest wins when two carry one marker."""
    found: dict[str, OpenIssue] = {}
    params = {"state": "open", "sort": "created", "direction": "asc"}
    for issue in client.paginate(f"{repo.path}/issues", params):
        if not isinstance(issue, dict) or "pull_request" in issue:
            continue
        body = issue.get("body") or ""
        m = _MARKER.search(body)
        if m and m.group(1) not in found:
            found[m.group(1)] = OpenIssue(int(issue["number"]), str(issue.get("html_url", "")), body)
    return found


@dataclasses.dataclass(frozen=True)
class Done:
    action: Action
    number: int
    url: str


def apply(
    client: Client, repo: Repo, actions: Sequence[Action], *, labels: Sequence[str] = (), info: Say
) -> tuple[list[Done], list[str]]:
    """Each action in turn; returns what was done and one line per action GitHub refused."""
    done: list[Done] = []
    errors: list[str] = []
    for action in actions:
        try:
            number, url = _apply(client, repo, action, labels)
        except GitHubError as exc:
            errors.append(f"{action.family}: could not {action.kind.value} its issue: {exc.message}")
            continue
        done.append(Done(action, number, url))
        info(f"{action.family}: {_PAST[action.kind]} issue #{number} {url}".rstrip())
    return done, errors


_PAST = {Kind.OPEN: "opened", Kind.COMMENT: "commented on", Kind.CLOSE: "closed"}


def _apply(client: Client, repo: Repo, action: Action, labels: Sequence[str]) -> tuple[int, str]:
    issue = action.issue
    if action.kind is Kind.OPEN:
        payload: dict[str, Any] = {"title": action.title, "body": action.body}
        if labels:
            payload["labels"] = list(labels)
        data = client.request("POST", f"{repo.path}/issues", json=payload).data
        return int(data["number"]), str(data.get("html_url", ""))
    assert issue is not None, "only opening goes without an issue"
    path = f"{repo.path}/issues/{issue.number}"
    client.request("POST", f"{path}/comments", json={"body": action.comment})
    if action.kind is Kind.COMMENT:
        client.request("PATCH", path, json={"title": action.title, "body": action.body})
    else:
        client.request("PATCH", path, json={"state": "closed", "state_reason": "completed"})
    return issue.number, issue.url
