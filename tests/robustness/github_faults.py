"""GitHub faults as data, for the fault suite: what the stand-in does wrong, and what must remain.

Each fault is scripted on the OpenAPI-checked stand-in (tests/fakegithub) before a report publishes.
Whatever happens, the report never raises, never leaves two comments or two check runs, never shows
the token, and when it could not confirm what it posted its warning says so.
"""

from __future__ import annotations

import dataclasses

from tests.fakegithub.server import Fault

COMMENTS = r"/issues/\d+/comments$"
COMMENT = r"/issues/comments/\d+$"
CHECKS = r"/check-runs$"
CHECK = r"/check-runs/\d+$"
LIST_CHECKS = r"/commits/[0-9a-f]+/check-runs$"
HTML = "<html><body><h1>Unicorn!</h1> This page is taking too long to load.</body></html>"


@dataclasses.dataclass(frozen=True)
class GitHubFault:
    id: str
    faults: tuple[Fault, ...]
    comments: int = 1
    """How many report comments the pull request holds afterwards (0 where GitHub never took one)."""
    check_runs: int = 1
    warns: str = ""
    """Words a warning must hold ("" : no warning is required)."""
    existing_comments: int = 0
    """Marked comments already on the pull request (a race, or an earlier report)."""
    list_lag: int = 0
    """Listings of the commit's check runs that miss a run just created (tests/fakegithub State.list_lag)."""


def _f(method: str, path: str, status: int, **kw: object) -> Fault:
    return Fault(method, path, status, **kw)  # type: ignore[arg-type]


FAULTS: tuple[GitHubFault, ...] = (
    GitHubFault("none", ()),
    # ambiguous POSTs: GitHub acted, the answer was lost
    GitHubFault("comment-post-502-after", (_f("POST", COMMENTS, 502, after=True),)),
    GitHubFault("comment-post-504-after-twice", (_f("POST", COMMENTS, 504, after=True, times=2),)),
    GitHubFault("comment-post-reset-after", (_f("POST", COMMENTS, 502, after=True, reset=True),)),
    GitHubFault("comment-post-slow-after", (_f("POST", COMMENTS, 201, after=True, delay_s=1.2),)),
    GitHubFault("check-post-502-after", (_f("POST", CHECKS, 502, after=True),)),
    GitHubFault("check-post-reset-after", (_f("POST", CHECKS, 502, after=True, reset=True),)),
    GitHubFault("check-post-502-after-listed-late", (_f("POST", CHECKS, 502, after=True),), list_lag=2),
    GitHubFault(
        "check-post-502-after-twice-listed-late", (_f("POST", CHECKS, 502, after=True, times=2),), list_lag=3
    ),
    GitHubFault("check-post-500-before-listed-late", (_f("POST", CHECKS, 500),), list_lag=2),
    GitHubFault("check-post-slow-after", (_f("POST", CHECKS, 201, after=True, delay_s=1.2),)),
    GitHubFault(
        "both-posts-slow-after",
        (
            _f("POST", COMMENTS, 201, after=True, delay_s=1.2),
            _f("POST", CHECKS, 201, after=True, delay_s=1.2),
        ),
    ),
    # failures before GitHub acted
    GitHubFault("comment-post-500-before", (_f("POST", COMMENTS, 500),)),
    GitHubFault(
        "comment-post-500-always", (_f("POST", COMMENTS, 500, times=99),), comments=0, warns="may or may not"
    ),
    GitHubFault("comment-post-reset-before", (_f("POST", COMMENTS, 0, reset=True),)),
    GitHubFault("check-post-500-before", (_f("POST", CHECKS, 500),)),
    GitHubFault(
        "check-post-500-always", (_f("POST", CHECKS, 500, times=99),), check_runs=0, warns="may or may not"
    ),
    GitHubFault("comment-post-422", (_f("POST", COMMENTS, 422),), comments=0, warns="could not comment"),
    GitHubFault("comment-post-403", (_f("POST", COMMENTS, 403),), comments=0, warns="read-only"),
    GitHubFault("check-post-403", (_f("POST", CHECKS, 403),), check_runs=0),
    GitHubFault("check-post-422-annotations", (_f("POST", CHECKS, 422),), warns="annotations"),
    # reads and edits
    GitHubFault("list-comments-500-once", (_f("GET", COMMENTS, 500),)),
    GitHubFault(
        "list-comments-502-always",
        (_f("GET", COMMENTS, 502, times=99),),
        comments=0,
        warns="could not comment",
    ),
    GitHubFault("list-comments-reset", (_f("GET", COMMENTS, 0, reset=True),)),
    GitHubFault("list-comments-slow", (_f("GET", COMMENTS, 200, delay_s=1.2),)),
    GitHubFault(
        "list-comments-rate-limited",
        (_f("GET", COMMENTS, 429, headers={"Retry-After": "0"}, body={"message": "rate limit"}),),
    ),
    GitHubFault("list-checks-500-once", (_f("GET", LIST_CHECKS, 500),)),
    GitHubFault("list-checks-403", (_f("GET", LIST_CHECKS, 403),), check_runs=0),
    GitHubFault("patch-comment-500-once", (_f("PATCH", COMMENT, 500),), existing_comments=1),
    GitHubFault(
        "patch-comment-404", (_f("PATCH", COMMENT, 404),), existing_comments=1, warns="could not comment"
    ),
    # HTML where JSON was promised
    GitHubFault("html-list-comments", (_f("GET", COMMENTS, 200, html=HTML),), comments=0, warns="not JSON"),
    GitHubFault("html-create-comment", (_f("POST", COMMENTS, 200, html=HTML),), comments=0, warns="not JSON"),
    GitHubFault(
        "html-patch-comment", (_f("PATCH", COMMENT, 200, html=HTML),), existing_comments=1, warns="not JSON"
    ),
    GitHubFault(
        "html-list-checks", (_f("GET", LIST_CHECKS, 200, html=HTML),), check_runs=0, warns="not JSON"
    ),
    GitHubFault("html-create-check", (_f("POST", CHECKS, 200, html=HTML),), check_runs=0, warns="not JSON"),
    GitHubFault("html-500", (_f("POST", COMMENTS, 500, html=HTML),)),
    # duplicates and their clean-up
    GitHubFault("two-comments-already", (), existing_comments=2),
    GitHubFault(
        "delete-fails",
        (_f("DELETE", COMMENT, 500, times=99),),
        comments=2,
        existing_comments=2,
        warns="did not let onnx-gate delete",
    ),
)
