"""The REST client against the fake GitHub: retries, rate limits, errors, pagination, the token."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ci_onnx.github.client import Ambiguous, Client, Forbidden, GitHubError, RateLimited, RetryPolicy
from tests.fakegithub import server
from tests.fakegithub.server import FakeGitHub, Fault

COMMENTS = "/repos/acme/digits/issues/7/comments"


@pytest.fixture
def gh() -> Iterator[FakeGitHub]:
    with server.running(lifetime_s=30) as fake:
        yield fake
        assert fake.state.violations == []


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def client(gh: FakeGitHub, sleeps: list[float]) -> Client:
    return Client(server.TOKEN, gh.url, sleep=sleeps.append, retry=RetryPolicy(attempts=3, backoff_s=0.5))


def test_a_500_is_retried_with_backoff(gh: FakeGitHub, client: Client, sleeps: list[float]) -> None:
    created = client.request("POST", COMMENTS, json={"body": "hi"}).data
    gh.state.faults.append(Fault("PATCH", "/comments/", 500, times=2))
    r = client.request("PATCH", f"/repos/acme/digits/issues/comments/{created['id']}", json={"body": "ho"})
    assert r.status == 200 and sleeps == [0.5, 1.0]
    assert [q.status for q in gh.state.requests] == [201, 500, 500, 200]


def test_5xx_until_the_last_attempt_is_an_error(gh: FakeGitHub, client: Client) -> None:
    gh.state.faults.append(Fault("GET", "/comments$", 502, times=5))
    with pytest.raises(GitHubError, match="502 to GET /repos/acme/digits/issues/7/comments"):
        client.request("GET", COMMENTS)
    assert len(gh.state.requests) == 3


def test_a_post_that_failed_ambiguously_is_not_retried(gh: FakeGitHub, client: Client) -> None:
    """GitHub may have acted on it: the caller must look before posting again."""
    gh.state.faults.append(Fault("POST", "/comments$", 502, after=True))
    with pytest.raises(Ambiguous, match="502 to POST"):
        client.request("POST", COMMENTS, json={"body": "hi"})
    assert len(gh.state.requests) == 1 and len(gh.state.comments) == 1


def test_a_200_with_an_html_body_is_a_clear_error(gh: FakeGitHub, client: Client) -> None:
    gh.state.faults.append(Fault("GET", "/comments$", 200, html="<html>Unicorn!</html>"))
    with pytest.raises(GitHubError, match="not JSON \\(text/html\\)"):
        client.request("GET", COMMENTS)


def test_a_rate_limit_403_waits_for_retry_after(gh: FakeGitHub, client: Client, sleeps: list[float]) -> None:
    gh.state.faults.append(
        Fault(
            "GET",
            "/comments$",
            403,
            {"Retry-After": "7"},
            {"message": "You have exceeded a secondary rate limit"},
        )
    )
    assert client.request("GET", COMMENTS).status == 200
    assert sleeps == [7.0]


def test_a_secondary_rate_limit_without_retry_after_waits_a_minute(
    gh: FakeGitHub, client: Client, sleeps: list[float]
) -> None:
    gh.state.faults.append(
        Fault("GET", "/comments$", 403, body={"message": "You have exceeded a secondary rate limit."})
    )
    assert client.request("GET", COMMENTS).status == 200
    assert sleeps == [60.0]


def test_an_exhausted_primary_rate_limit_waits_for_its_reset(
    gh: FakeGitHub, client: Client, sleeps: list[float]
) -> None:
    import time

    reset = str(int(time.time()) + 3)
    gh.state.faults.append(
        Fault("GET", "/comments$", 403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": reset})
    )
    assert client.request("GET", COMMENTS).status == 200
    assert len(sleeps) == 1 and 0 <= sleeps[0] <= 4


def test_a_retry_after_beyond_the_longest_wait_gives_up(
    gh: FakeGitHub, client: Client, sleeps: list[float]
) -> None:
    gh.state.faults.append(Fault("GET", "/comments$", 429, {"Retry-After": "3600"}))
    with pytest.raises(RateLimited, match="3600 s"):
        client.request("GET", COMMENTS)
    assert sleeps == []


def test_a_422_names_the_request_and_githubs_reason(gh: FakeGitHub, client: Client) -> None:
    gh.state.faults.append(
        Fault(
            "POST",
            "/check-runs$",
            422,
            body={"message": "Validation Failed", "errors": [{"field": "head_sha"}]},
        )
    )
    body = {"name": "onnx-gate", "head_sha": "f" * 40}
    with pytest.raises(
        GitHubError, match="422 to POST /repos/acme/digits/check-runs: Validation Failed"
    ) as info:
        client.request("POST", "/repos/acme/digits/check-runs", json=body)
    assert info.value.status == 422 and len(gh.state.requests) == 1  # not retried


def test_a_plain_403_is_forbidden_and_not_retried(gh: FakeGitHub, client: Client) -> None:
    gh.state.read_only = True
    with pytest.raises(Forbidden, match="Resource not accessible by integration"):
        client.request("POST", COMMENTS, json={"body": "hi"})
    assert len(gh.state.requests) == 1


def test_pagination_follows_link_headers(gh: FakeGitHub, client: Client) -> None:
    for i in range(230):
        gh.state.add_comment(7, f"comment {i}", "someone")
    items = list(client.paginate(COMMENTS))
    assert len(items) == 230 and items[-1]["body"] == "comment 229"
    assert [q.query.get("page", "1") for q in gh.state.requests] == ["1", "2", "3"]


def test_pagination_is_bounded(gh: FakeGitHub, client: Client) -> None:
    for i in range(250):
        gh.state.add_comment(7, f"comment {i}", "someone")
    assert len(list(client.paginate(COMMENTS, max_pages=2))) == 200


def test_the_token_is_never_in_errors_or_repr(gh: FakeGitHub, sleeps: list[float]) -> None:
    logged: list[str] = []
    c = Client(server.TOKEN, gh.url, sleep=sleeps.append, log=logged.append)
    gh.state.faults.append(Fault("GET", "/comments$", 500, times=9))
    with pytest.raises(GitHubError) as info:
        c.request("GET", COMMENTS)
    assert server.TOKEN not in f"{info.value} {c!r} {' '.join(logged)}"
    assert logged  # the retries were logged, without the token


def test_a_wrong_token_is_rejected_by_the_fake(gh: FakeGitHub) -> None:
    with pytest.raises(Forbidden, match="401"):
        Client("wrong", gh.url).request("GET", COMMENTS)


def test_a_connection_refused_is_an_error_after_retries(sleeps: list[float]) -> None:
    with server.running() as fake:
        url = fake.url
    c = Client("t", url, sleep=sleeps.append, retry=RetryPolicy(attempts=2), timeout=(0.5, 0.5))
    with pytest.raises(GitHubError, match="did not answer"):
        c.request("GET", COMMENTS)
    assert len(sleeps) == 1


def test_only_commit_statuses_are_posts_retried_even_in_a_repository_named_statuses() -> None:
    from ci_onnx.github.client import RETRYABLE_POST

    assert RETRYABLE_POST.search("https://api.github.com/repos/acme/digits/statuses/4f1d2c3b")
    assert not RETRYABLE_POST.search("https://api.github.com/repos/acme/statuses/check-runs")
    assert not RETRYABLE_POST.search("https://api.github.com/repos/statuses/statuses/issues/7/comments")
