"""The sticky PR comment: found by marker and author, edited in place, never duplicated."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from ci_onnx.github.client import Client, RetryPolicy
from ci_onnx.github.comments import ACTIONS_BOT, upsert, whoami
from ci_onnx.github.context import Repo
from tests.fakegithub import server
from tests.fakegithub.server import FakeGitHub

REPO = Repo("acme", "digits")
MARK = "<!-- onnx-gate:report -->"


@pytest.fixture
def gh() -> Iterator[FakeGitHub]:
    with server.running(lifetime_s=30) as fake:
        yield fake
        assert fake.state.violations == []


def client(gh: FakeGitHub) -> Client:
    return Client(server.TOKEN, gh.url, sleep=lambda _s: None, retry=RetryPolicy(attempts=3))


def bodies(gh: FakeGitHub, issue: int = 7) -> list[str]:
    return [
        c["body"] for c in sorted(gh.state.comments.values(), key=lambda c: c["id"]) if c["issue"] == issue
    ]


def test_created_when_absent_then_edited_in_place(gh: FakeGitHub) -> None:
    first = upsert(client(gh), REPO, 7, f"{MARK}\nrun 1", MARK)
    second = upsert(client(gh), REPO, 7, f"{MARK}\nrun 2", MARK)
    assert (first.action, second.action) == ("created", "updated")
    assert first.id == second.id
    assert bodies(gh) == [f"{MARK}\nrun 2"]


def test_found_past_the_first_page_among_other_comments(gh: FakeGitHub) -> None:
    for i in range(150):
        gh.state.add_comment(7, f"review comment {i}", "octocat")
    mine = gh.state.add_comment(7, f"{MARK}\nold", ACTIONS_BOT)
    result = upsert(client(gh), REPO, 7, f"{MARK}\nnew", MARK)
    assert result.id == mine["id"] and result.action == "updated"
    assert len(bodies(gh)) == 151


def test_someone_elses_comment_with_the_marker_is_left_alone(gh: FakeGitHub) -> None:
    quoted = gh.state.add_comment(7, f"look at this: {MARK}", "octocat")
    result = upsert(client(gh), REPO, 7, f"{MARK}\nreport", MARK)
    assert result.action == "created" and result.id != quoted["id"]
    assert gh.state.comments[quoted["id"]]["body"] == f"look at this: {MARK}"


def test_the_author_is_the_tokens_own_user_where_get_user_works(gh: FakeGitHub) -> None:
    gh.state.user_endpoint_allowed = True
    gh.state.login = "onnx-gate-bot"
    assert whoami(client(gh)) == "onnx-gate-bot"
    gh.state.user_endpoint_allowed = False
    assert whoami(client(gh)) == ACTIONS_BOT


def test_duplicates_left_by_an_earlier_race_are_removed(gh: FakeGitHub) -> None:
    a = gh.state.add_comment(7, f"{MARK}\na", ACTIONS_BOT)
    gh.state.add_comment(7, f"{MARK}\nb", ACTIONS_BOT)
    result = upsert(client(gh), REPO, 7, f"{MARK}\nc", MARK)
    assert result.id == a["id"] and result.removed_duplicates == 1
    assert bodies(gh) == [f"{MARK}\nc"]


@pytest.mark.parametrize("attempt", range(3))
def test_two_reporters_at_once_leave_one_comment(gh: FakeGitHub, attempt: int) -> None:
    # Both reporters' first listing waits until the other has listed too: both see no comment and
    # both create one, the worst interleaving.
    gh.state.list_barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def report(n: int) -> None:
        try:
            upsert(client(gh), REPO, 7, f"{MARK}\nreporter {n}", MARK)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=report, args=(n,)) for n in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:  # the stand-in's barrier waits up to 60 s for the other listing: wait longer
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a reporter still runs"
    assert not errors
    creates = [q for q in gh.state.requests if q.operation == "issues/create-comment"]
    assert len(creates) == 2  # the race really happened
    assert len(bodies(gh)) == 1 and bodies(gh)[0] in (f"{MARK}\nreporter 1", f"{MARK}\nreporter 2")


def test_a_body_without_the_marker_is_refused(gh: FakeGitHub) -> None:
    with pytest.raises(ValueError, match="marker"):
        upsert(client(gh), REPO, 7, "no marker", MARK)
