"""One sticky comment per pull request: found by a hidden marker and its author, edited in place.

Two reports of the same pull request can run at once (a re-run, two pushes in a row). Both may find no
comment and both create one; so after creating, the reporter lists again and, if it sees more than one
of its comments, keeps the oldest (edited to its body) and deletes the rest. Whatever the interleaving,
one comment remains.

Creating is the one request that is not idempotent. When it fails ambiguously (a 5xx, a timeout: GitHub
may have made the comment), the reporter lists again and posts again only if its comment is not there.
A duplicate that cannot be deleted is counted in ``left_duplicates``, so the log says what is there.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ci_onnx.github.client import Ambiguous, Client, Forbidden, GitHubError, NotFound
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
    left_duplicates: int = 0
    """Duplicates that could not be deleted (GitHub failed the DELETE)."""


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
        and isinstance(c.get("id"), int)
        and marker in str(c.get("body") or "")
        and _login(c.get("user")).lower() == login.lower()
    ]
    return sorted(found, key=lambda c: int(c["id"]))


def _login(user: Any) -> str:
    return str(user.get("login") or "") if isinstance(user, dict) else ""


def _delete(client: Client, repo: Repo, comment_id: int) -> bool | None:
    """True: deleted; False: already gone; None: GitHub failed the request (the duplicate stays)."""
    try:
        client.request("DELETE", f"{repo.path}/issues/comments/{comment_id}")
    except NotFound:  # a concurrent reporter deleted it first
        return False
    except Forbidden:
        raise
    except GitHubError:
        return None
    return True


def _delete_all(client: Client, repo: Repo, ids: list[int]) -> tuple[int, int]:
    outcomes = [_delete(client, repo, i) for i in ids]
    return sum(o is True for o in outcomes), sum(o is None for o in outcomes)


CREATE_ATTEMPTS = 3


def _create(client: Client, repo: Repo, number: int, body: str, marker: str, login: str) -> dict[str, Any]:
    """POST the comment; after an ambiguous failure, the comment found by its marker, else POST again."""
    for attempt in range(1, CREATE_ATTEMPTS + 1):
        try:
            return dict(
                client.request("POST", f"{repo.path}/issues/{number}/comments", json={"body": body}).data
            )
        except Ambiguous:
            found = ours(client, repo, number, marker, login)
            if found:
                return found[0]
            if attempt == CREATE_ATTEMPTS:
                raise
    raise AssertionError("unreachable: the last attempt returns or raises")


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
        removed, left = _delete_all(client, repo, [int(c["id"]) for c in existing[1:]])
        return CommentResult(int(keep["id"]), str(keep.get("html_url", "")), "updated", removed, left)
    created = _create(client, repo, number, body, marker, login)
    mine = ours(client, repo, number, marker, login)
    if len(mine) <= 1:
        return CommentResult(int(created["id"]), str(created.get("html_url", "")), "created")
    oldest = int(mine[0]["id"])
    keep = _update(client, repo, oldest, body) if oldest != int(created["id"]) else created
    removed, left = _delete_all(client, repo, [int(c["id"]) for c in mine if int(c["id"]) != oldest])
    action = "created" if oldest == int(created["id"]) else "updated"
    return CommentResult(int(keep["id"]), str(keep.get("html_url", "")), action, removed, left)
