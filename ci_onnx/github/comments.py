"""One sticky comment per pull request: found by a hidden marker and its author, edited in place.

Two reports of the same pull request can run at once (a re-run, two pushes in a row). Both may find no
comment and both create one; so after creating, the reporter lists again and, if it sees more than one
of its comments, keeps the oldest (edited to its body) and deletes the rest. Whatever the interleaving,
one comment remains.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ci_onnx.github.client import Client, Forbidden, NotFound
from ci_onnx.github.context import Repo

ACTIONS_BOT = "github-actions[bot]"
"""The author of comments made with a workflow's GITHUB_TOKEN, which may not call GET /user."""


@dataclasses.dataclass(frozen=True)
class CommentResult:
    id: int
    url: str
    action: str
    """``created`` or ``updated``."""
    removed_duplicates: int = 0


def whoami(client: Client) -> str:
    """The login comments made with this token carry."""
    try:
        data = client.request("GET", "/user").data
    except Forbidden:  # an installation token (GITHUB_TOKEN) is not a user
        return ACTIONS_BOT
    return str(data.get("login", ACTIONS_BOT)) if isinstance(data, dict) else ACTIONS_BOT


def ours(client: Client, repo: Repo, number: int, marker: str, login: str) -> list[dict[str, Any]]:
    """This token's comments on the pull request that carry ``marker``, oldest first."""
    found = [
        c
        for c in client.paginate(f"{repo.path}/issues/{number}/comments")
        if isinstance(c, dict)
        and marker in (c.get("body") or "")
        and (c.get("user") or {}).get("login", "").lower() == login.lower()
    ]
    return sorted(found, key=lambda c: int(c["id"]))


def _delete(client: Client, repo: Repo, comment_id: int) -> bool:
    try:
        client.request("DELETE", f"{repo.path}/issues/comments/{comment_id}")
    except NotFound:  # a concurrent reporter deleted it first
        return False
    return True


def _update(client: Client, repo: Repo, comment_id: int, body: str) -> dict[str, Any]:
    return dict(
        client.request("PATCH", f"{repo.path}/issues/comments/{comment_id}", json={"body": body}).data
    )


def upsert(
    client: Client, repo: Repo, number: int, body: str, marker: str, login: str | None = None
) -> CommentResult:
    """Edit this token's marked comment on pull request ``number`` to ``body``, or create it."""
    if marker not in body:
        raise ValueError("the body must carry the marker, or the next run cannot find the comment")
    login = login or whoami(client)
    existing = ours(client, repo, number, marker, login)
    if existing:
        keep = _update(client, repo, int(existing[0]["id"]), body)
        removed = sum(_delete(client, repo, int(c["id"])) for c in existing[1:])
        return CommentResult(int(keep["id"]), str(keep.get("html_url", "")), "updated", removed)
    created = client.request("POST", f"{repo.path}/issues/{number}/comments", json={"body": body}).data
    mine = ours(client, repo, number, marker, login)
    if len(mine) <= 1:
        return CommentResult(int(created["id"]), str(created.get("html_url", "")), "created")
    oldest = int(mine[0]["id"])
    keep = _update(client, repo, oldest, body) if oldest != int(created["id"]) else created
    removed = sum(_delete(client, repo, int(c["id"])) for c in mine if int(c["id"]) != oldest)
    action = "created" if oldest == int(created["id"]) else "updated"
    return CommentResult(int(keep["id"]), str(keep.get("html_url", "")), action, removed)
