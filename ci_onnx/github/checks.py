"""A check run with annotations (50 per request, the rest in follow-up updates), or a commit status."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, Literal

from ci_onnx.github.client import Client
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


@dataclasses.dataclass(frozen=True)
class CheckRunResult:
    id: int
    url: str
    requests: int


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
        "status": "completed",
        "conclusion": "success" if success else "failure",
        "output": output,
    }
    if details_url:
        body["details_url"] = details_url
    run = client.request("POST", f"{repo.path}/check-runs", json=body).data
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
    return CheckRunResult(int(run["id"]), str(run.get("html_url", "")), max(1, len(chunks)))


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
