"""The tracking issue helpers (for the nightly run) against the fake GitHub."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ci_onnx.github import issues
from ci_onnx.github.client import Client
from ci_onnx.github.context import Repo
from tests.fakegithub import server
from tests.fakegithub.server import FakeGitHub

REPO = Repo("acme", "digits")
MARK = "<!-- onnx-gate:nightly -->"


@pytest.fixture
def gh() -> Iterator[FakeGitHub]:
    with server.running(lifetime_s=30) as fake:
        yield fake
        assert fake.state.violations == []


def test_opened_once_then_edited_then_closed(gh: FakeGitHub) -> None:
    c = Client(server.TOKEN, gh.url)
    first = issues.upsert(
        c, REPO, title="nightly: 1 failure", body=f"{MARK}\none", marker=MARK, labels=["onnx-gate"]
    )
    second = issues.upsert(
        c, REPO, title="nightly: 2 failures", body=f"{MARK}\ntwo", marker=MARK, labels=["onnx-gate"]
    )
    assert (first.action, second.action, first.number) == ("created", "updated", second.number)
    assert gh.state.issues[first.number]["title"] == "nightly: 2 failures"
    closed = issues.close(c, REPO, marker=MARK, label="onnx-gate")
    assert closed is not None and gh.state.issues[first.number]["state"] == "closed"
    assert issues.close(c, REPO, marker=MARK, label="onnx-gate") is None


def test_a_pull_request_with_the_marker_is_not_the_issue(gh: FakeGitHub) -> None:
    c = Client(server.TOKEN, gh.url)
    pr = issues.upsert(c, REPO, title="a PR", body=f"quoting {MARK}", marker=MARK)
    gh.state.pulls.add(pr.number)
    assert issues.find_open(c, REPO, MARK) is None
