"""A check run with annotations (50 per request, the rest in follow-up updates), or a commit status.

One check run per (commit, name): it carries ``external_id`` = :func:`external_id`, and a report first
looks for it on the commit and updates it in place; it creates one only when none is there, and after
an ambiguous failure of that POST it looks again before posting again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, Literal

from ci_onnx.github.client import Ambiguous, Client
from ci_onnx.github.context import Repo

ANNOTATIONS_PER_REQUEST = 50
MAX_TITLE = 255
STATUS_DESCRIPTION = 140


@dataclasses.dataclass(frozen=True)
class Annotation:
    path: str
    message: str
    level: Literal["notice", "warning", "failure"] = "failure"
    title: str = ""
    raw_details: str = ""
    start_line: int = 1
    end_line: int = 1

    def to_api(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "path": self.path,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "annotation_level": self.level,
            "message": self.message[:64_000],
        }
        if self.title:
            out["title"] = self.title[:MAX_TITLE]
        if self.raw_details:
            out["raw_details"] = self.raw_details[:64_000]
        return out


CREATE_ATTEMPTS = 3


@dataclasses.dataclass(frozen=True)
class CheckRunResult:
    id: int
    url: str
    requests: int
    action: str = "created"
    """``created`` or ``updated`` (a re-run of the report for the same commit)."""


def external_id(name: str) -> str:
    return f"onnx-gate:{name}"[:100]


def find(client: Client, repo: Repo, sha: str, name: str) -> dict[str, Any] | None:
    """This report's check run on ``sha`` (by name and external id), the newest if several."""
    data = client.request(
        "GET", f"{repo.path}/commits/{sha}/check-runs", params={"check_name": name, "per_page": 100}
    ).data
    runs = data.get("check_runs") if isinstance(data, dict) else None
    mine = [
        r
        for r in (runs if isinstance(runs, list) else [])
        if isinstance(r, dict) and r.get("external_id") == external_id(name) and isinstance(r.get("id"), int)
    ]
    return max(mine, key=lambda r: int(r["id"])) if mine else None


def publish_check_run(
    client: Client,
    repo: Repo,
    *,
    sha: str,
    name: str,
    success: bool,
    title: str,
    summary: str,
    annotations: Sequence[Annotation] = (),
    details_url: str = "",
) -> CheckRunResult:
    """Create a completed check run; annotations past the first 50 go in follow-up updates."""
    chunks = [
        annotations[i : i + ANNOTATIONS_PER_REQUEST]
        for i in range(0, len(annotations), ANNOTATIONS_PER_REQUEST)
    ]
    output: dict[str, Any] = {"title": title[:MAX_TITLE], "summary": summary}
    if chunks:
        output["annotations"] = [a.to_api() for a in chunks[0]]
    body: dict[str, Any] = {
        "name": name,
        "head_sha": sha,
        "external_id": external_id(name),
        "status": "completed",
        "conclusion": "success" if success else "failure",
        "output": output,
    }
    if details_url:
        body["details_url"] = details_url
    run, action = _create_or_update(client, repo, sha, name, body)
    for chunk in chunks[1:]:
        client.request(
            "PATCH",
            f"{repo.path}/check-runs/{run['id']}",
            json={
                "output": {
                    "title": output["title"],
                    "summary": summary,
                    "annotations": [a.to_api() for a in chunk],
                }
            },
        )
    return CheckRunResult(int(run["id"]), str(run.get("html_url", "")), max(1, len(chunks)), action)


def _create_or_update(
    client: Client, repo: Repo, sha: str, name: str, body: dict[str, Any]
) -> tuple[dict[str, Any], str]:
    found = find(client, repo, sha, name)
    for attempt in range(1, CREATE_ATTEMPTS + 1):
        if found is not None:
            update = {k: v for k, v in body.items() if k not in ("head_sha", "name")}
            data = client.request("PATCH", f"{repo.path}/check-runs/{found['id']}", json=update).data
            return _run(data), "updated"
        try:
            return _run(client.request("POST", f"{repo.path}/check-runs", json=body).data), "created"
        except Ambiguous:
            if attempt == CREATE_ATTEMPTS:
                raise
            found = _look_again(client, repo, sha, name)
    raise AssertionError("unreachable: the last attempt returns or raises")


LOOKS_AFTER_AMBIGUOUS = 4
"""After a POST whose answer was lost, how many times to list the commit's check runs (waiting the
client's backoff between looks) before posting again: GitHub lists a run it has just created a moment
late, and a second POST then makes a second check run that can never be deleted."""


def _look_again(client: Client, repo: Repo, sha: str, name: str) -> dict[str, Any] | None:
    for look in range(LOOKS_AFTER_AMBIGUOUS):
        if look:
            client.pause(look, f"check run {name!r} not listed yet after an unconfirmed POST")
        found = find(client, repo, sha, name)
        if found is not None:
            return found
    return None


def _run(data: Any) -> dict[str, Any]:
    if not isinstance(data, dict) or not isinstance(data.get("id"), int):
        from ci_onnx.github.client import GitHubError

        raise GitHubError("GitHub answered a check-run request without the check run's id")
    return data


def publish_status(
    client: Client,
    repo: Repo,
    *,
    sha: str,
    context: str,
    success: bool,
    description: str,
    target_url: str = "",
) -> None:
    """A commit status, where the token may not create check runs."""
    if len(description) > STATUS_DESCRIPTION:
        description = description[: STATUS_DESCRIPTION - 1] + "…"
    body: dict[str, Any] = {
        "state": "success" if success else "failure",
        "context": context,
        "description": description,
    }
    if target_url:
        body["target_url"] = target_url
    client.request("POST", f"{repo.path}/statuses/{sha}", json=body)
