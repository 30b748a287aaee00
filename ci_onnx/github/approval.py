"""An approval of a pull request's policy change that its author cannot forge.

Where the base's config names a label (``gate.approval_label``), a pull request that loosens the
policy (a ledger entry added, a tolerance or budget loosened, a target dropped) is judged by its own
policy once that label was applied by someone with write access who is not its author. Both are read
back from GitHub: the pull request's events say who applied the label last (and that nobody removed
it since), and the collaborator permission endpoint says what that person may do. A label is only a
request: anyone who can label may apply it, so the person is what is checked, never the label.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ci_onnx.github.client import Client, GitHubError
from ci_onnx.github.context import Repo

WRITERS = frozenset({"admin", "maintain", "write"})
"""Permissions that may approve (the collaborator endpoint's ``role_name``, else ``permission``)."""


@dataclasses.dataclass(frozen=True)
class Approval:
    by: str = ""
    """The login that approved, or "" when nobody did."""
    why_not: str = ""
    """Why the label does not count, said in the report ("" when it counts or was never applied)."""


def _login(value: Any) -> str:
    return str(value.get("login", "")) if isinstance(value, dict) else ""


def approval(client: Client, repo: Repo, number: int, label: str) -> Approval:
    """Whether ``label`` on pull request ``number`` was applied, and is still on, by a writer who is
    not the author; a question GitHub cannot answer is an approval that does not count."""
    try:
        pull = client.request("GET", f"{repo.path}/pulls/{number}").data
        author = _login(pull.get("user")) if isinstance(pull, dict) else ""
        applied_by = ""
        for event in client.paginate(f"{repo.path}/issues/{number}/events", max_pages=10):
            if not isinstance(event, dict) or not isinstance(event.get("label"), dict):
                continue
            if event["label"].get("name") != label:
                continue
            if event.get("event") == "labeled":
                applied_by = _login(event.get("actor"))
            elif event.get("event") == "unlabeled":
                applied_by = ""
        if not applied_by:
            return Approval()
        if applied_by == author:
            return Approval(
                why_not=f"the label {label!r} was applied by @{author}, the pull request's author"
            )
        perm = client.request("GET", f"{repo.path}/collaborators/{applied_by}/permission").data
        role = str(perm.get("role_name") or perm.get("permission") or "") if isinstance(perm, dict) else ""
    except GitHubError as exc:
        return Approval(why_not=f"the label {label!r} could not be checked: {exc.message}")
    if role not in WRITERS:
        return Approval(
            why_not=f"the label {label!r} was applied by @{applied_by}, who has {role or 'no'} access"
        )
    return Approval(by=applied_by)
