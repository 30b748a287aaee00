"""What a run knows about GitHub, read once at the CLI edge and passed down frozen."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any


@dataclasses.dataclass(frozen=True)
class Repo:
    owner: str
    name: str

    @classmethod
    def parse(cls, full_name: str) -> Repo:
        owner, _, name = full_name.partition("/")
        return cls(owner, name)

    @property
    def path(self) -> str:
        return f"/repos/{self.owner}/{self.name}"

    def __str__(self) -> str:
        return f"{self.owner}/{self.name}"


@dataclasses.dataclass(frozen=True)
class GitHubContext:
    token: str = dataclasses.field(default="", repr=False)
    repository: str = ""
    api_url: str = "https://api.github.com"
    server_url: str = "https://github.com"
    run_id: str = ""
    sha: str = ""
    """The commit the report is about: the PR's head, not the merge commit Actions checks out."""
    pr_number: int | None = None
    event_name: str = ""
    base_sha: str = ""
    """A pull request's base commit (``pull_request.base.sha``, not the branch's tip): what its
    baseline is the results of."""
    base_ref: str = ""
    """The branch the pull request goes into (``main``)."""
    from_fork: bool = False
    step_summary: Path | None = None
    output: Path | None = None
    in_actions: bool = False

    @property
    def repo(self) -> Repo | None:
        return Repo.parse(self.repository) if "/" in self.repository else None

    @property
    def can_publish(self) -> bool:
        return bool(self.token and self.repo)

    @property
    def run_url(self) -> str:
        return (
            f"{self.server_url}/{self.repository}/actions/runs/{self.run_id}"
            if self.run_id and self.repo
            else ""
        )

    @property
    def commit_url(self) -> str:
        return f"{self.server_url}/{self.repository}/commit/{self.sha}" if self.sha and self.repo else ""


def _event(path: str) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_bytes()) if path else {}
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def _obj(value: Any) -> dict[str, Any]:
    """An event field that should be an object; anything else (``head: null``) reads as empty."""
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def from_env(env: Mapping[str, str], *, token: str = "", pr_number: int | None = None) -> GitHubContext:
    """The context of a GitHub Actions run (``pull_request``, ``pull_request_target``, ``workflow_run``,
    ``push``, …) or of a local run (everything empty)."""
    event = _event(env.get("GITHUB_EVENT_PATH", ""))
    repository = env.get("GITHUB_REPOSITORY", "")
    sha = env.get("GITHUB_SHA", "")
    number = None
    from_fork = False
    base: dict[str, Any] = {}
    pr = event.get("pull_request")
    run = event.get("workflow_run")
    if isinstance(pr, dict):
        number = pr.get("number")
        base = _obj(pr.get("base"))
        head = _obj(pr.get("head"))
        sha = _str(head.get("sha")) or sha
        head_repo = _str(_obj(head.get("repo")).get("full_name"))
        from_fork = bool(head_repo) and head_repo != repository
    elif isinstance(run, dict):
        sha = _str(run.get("head_sha")) or sha
        prs = run.get("pull_requests")
        first = _obj(prs[0]) if isinstance(prs, list) and prs else {}
        number = first.get("number")
        base = _obj(first.get("base"))
        head_repo = _str(_obj(run.get("head_repository")).get("full_name"))
        from_fork = bool(head_repo) and head_repo != repository
    return GitHubContext(
        token=token.strip(),
        repository=repository,
        api_url=env.get("GITHUB_API_URL", "https://api.github.com") or "https://api.github.com",
        server_url=env.get("GITHUB_SERVER_URL", "https://github.com") or "https://github.com",
        run_id=env.get("GITHUB_RUN_ID", ""),
        sha=sha,
        pr_number=pr_number
        if pr_number is not None
        else (number if isinstance(number, int) and not isinstance(number, bool) and number > 0 else None),
        event_name=env.get("GITHUB_EVENT_NAME", ""),
        base_sha=_str(base.get("sha")),
        base_ref=_str(base.get("ref")),
        from_fork=from_fork,
        step_summary=Path(env["GITHUB_STEP_SUMMARY"]) if env.get("GITHUB_STEP_SUMMARY") else None,
        output=Path(env["GITHUB_OUTPUT"]) if env.get("GITHUB_OUTPUT") else None,
        in_actions=env.get("GITHUB_ACTIONS") == "true",
    )
