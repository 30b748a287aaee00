"""The tracking-issue life cycle against the fake GitHub API (bodies checked against GitHub's OpenAPI)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ci_onnx.contracts.errors import EnvironmentProblem
from ci_onnx.contracts.target import Status
from ci_onnx.github.client import Client, RetryPolicy
from ci_onnx.github.context import Repo
from ci_onnx.host.resolve import PipIndex, releases_between
from ci_onnx.nightly import command, state
from ci_onnx.nightly.night import Kind
from ci_onnx.nightly.text import Night
from ci_onnx.plan import read_plan
from tests.fakegithub import server
from tests.fakegithub.server import FakeGitHub, Fault
from tests.support import pypi
from tests.support.nights import target, write_night

REPO = Repo("acme", "digits")
INDEXED = ["1.30.0", "1.31.1", "1.31.2", "1.31.3", "1.32.0", "1.32.1"]
FAMILY = "cpu-op17-dynamo@latest"


@pytest.fixture
def gh() -> Iterator[FakeGitHub]:
    with server.running(lifetime_s=60) as fake:
        yield fake
        assert fake.state.violations == []


@pytest.fixture(scope="module")
def index() -> Iterator[PipIndex]:
    with pypi.serve({"onnxruntime": [pypi.wheel_name("onnxruntime", v) for v in INDEXED]}) as url:
        yield PipIndex(env=pypi.pip_env(url))


class Verifier:
    """onnxruntime broke the model in 1.31.3, a release no night verified (latest went 1.31.1 → 1.32.0)."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def __call__(self, version: str) -> Status:
        self.asked.append(version)
        return Status.FAILED if version in ("1.31.3", "1.32.0") else Status.PASSED


def night(
    tmp: Path,
    gh: FakeGitHub,
    index: PipIndex,
    name: str,
    cells: list[tuple[str, str, bool | None]],
    verifier: Verifier | None = None,
) -> command.Outcome:
    results, plan = write_night(tmp, [(target(v, spec), fails) for v, spec, fails in cells], name)
    return command.run(
        [results],
        read_plan(plan),
        Night(name, f"https://github.com/acme/digits/actions/runs/{name}"),
        releases=lambda good, bad, package: releases_between(good, bad, package, index),
        client=Client(server.TOKEN, gh.url),
        repo=REPO,
        state_file=tmp / "state.json",
        verifier_for=lambda _f: verifier,
        labels=["onnx-gate-nightly"],
    )


def ops(gh: FakeGitHub) -> list[str]:
    return [r.operation for r in gh.state.requests if r.operation != "issues/list-for-repo"]


def test_green_red_red_green_leaves_one_issue_opened_commented_closed(
    tmp_path: Path, gh: FakeGitHub, index: PipIndex
) -> None:
    verify = Verifier()
    # night 1: latest is 1.31.1, green: nothing on GitHub, 1.31.1 remembered
    first = night(tmp_path, gh, index, "2026-11-26", [("1.31.1", "latest", False)], verify)
    assert first.decided.actions == () and ops(gh) == []
    assert state.read_memory(tmp_path / "state.json").last_good == {FAMILY: "1.31.1"}

    # night 2: latest is 1.32.0 and fails; the pinned 1.31.1 passes
    second = night(
        tmp_path, gh, index, "2026-11-27", [("1.32.0", "latest", True), ("1.31.1", "1.31.1", False)], verify
    )
    assert [a.kind for a in second.decided.actions] == [Kind.OPEN]
    assert verify.asked == ["1.31.2", "1.31.3"]  # between 1.31.1 and 1.32.0: two of three, log2
    (issue,) = gh.state.issues.values()
    assert issue["title"] == f"onnx-gate nightly: {FAMILY} fails on onnxruntime 1.32.0"
    assert issue["labels"] == ["onnx-gate-nightly"]
    body = issue["body"]
    assert "<!-- onnx-gate:nightly:cpu-op17-dynamo@latest -->" in body
    assert "**First failing release: onnxruntime 1.31.3** (1.31.2 is the newest release before it" in body
    assert "| 1.31.3 | failed | verified for this search |" in body
    assert "| `ort1.32.0-cpu-op17-dynamo` | logits |" in body  # the parity row, per output
    assert "out of tolerance" in body
    assert (
        "onnx-gate verify --bundle onnx-gate-out/bundles/op17-dynamo --target ort1.31.3-cpu-op17-dynamo"
        in body
    )
    assert (
        "onnx-gate verify --bundle onnx-gate-out/bundles/op17-dynamo --target ort1.32.0-cpu-op17-dynamo"
        in body
    )
    tracked = state.extract(body)
    assert tracked is not None and (tracked.first_bad, tracked.last_good, tracked.since) == (
        "1.31.3",
        "1.31.2",
        "2026-11-27",
    )

    # night 3: red again: a comment on the same issue, the body brought up to date, no new search
    night(
        tmp_path, gh, index, "2026-11-28", [("1.32.0", "latest", True), ("1.31.1", "1.31.1", False)], verify
    )
    assert verify.asked == ["1.31.2", "1.31.3"]
    (comment,) = gh.state.comments.values()
    assert comment["issue"] == issue["number"]
    assert comment["body"].startswith("❌ Still failing the night of 2026-11-28")
    assert "night 2 in a row" in comment["body"] and "First failing release: **1.31.3**" in comment["body"]
    again = gh.state.issues[issue["number"]]["body"]
    assert "Failing since 2026-11-27 (2 nights)" in again
    assert "| 1.31.3 | failed | verified for this search |" in again  # the search is kept in the state
    assert "| 1.32.0 | failed | a night's results |" in again

    # night 4: latest is 1.32.1 and passes: the issue closes with a comment
    fourth = night(
        tmp_path, gh, index, "2026-11-29", [("1.32.1", "latest", False), ("1.31.1", "1.31.1", False)], verify
    )
    assert [a.kind for a in fourth.decided.actions] == [Kind.CLOSE]
    assert len(gh.state.issues) == 1 and gh.state.issues[issue["number"]]["state"] == "closed"
    closing = [c for c in gh.state.comments.values() if c["body"].startswith("✅")]
    assert len(closing) == 1 and "passes again on onnxruntime 1.32.1" in closing[0]["body"]
    assert ops(gh) == [
        "issues/create",
        "issues/create-comment",
        "issues/update",
        "issues/create-comment",
        "issues/update",
    ]
    closed = next(r for r in gh.state.requests if r.operation == "issues/update" and r.body.get("state"))
    assert closed.body == {"state": "closed", "state_reason": "completed"}
    assert state.read_memory(tmp_path / "state.json").last_good[FAMILY] == "1.32.1"

    # night 5: green again: nothing more
    night(tmp_path, gh, index, "2026-11-30", [("1.32.1", "latest", False)], verify)
    assert len(ops(gh)) == 5


def test_the_last_good_release_comes_from_the_state_file_when_the_night_has_none(
    tmp_path: Path, gh: FakeGitHub, index: PipIndex
) -> None:
    night(tmp_path, gh, index, "n1", [("1.31.1", "latest", False)])
    night(tmp_path, gh, index, "n2", [("1.32.0", "latest", True)])  # no verifier: a range
    body = next(iter(gh.state.issues.values()))["body"]
    assert "after 1.31.1 (passed), at or before 1.32.0 (fails).** Not verified yet: 1.31.2, 1.31.3" in body


def test_without_any_release_that_passed_the_issue_says_so(
    tmp_path: Path, gh: FakeGitHub, index: PipIndex
) -> None:
    night(tmp_path, gh, index, "n1", [("1.32.0", "latest", True)], Verifier())
    body = next(iter(gh.state.issues.values()))["body"]
    assert "**First failing release: not known.**" in body and "`latest-2`" in body


def test_each_broken_family_gets_its_own_issue_and_a_missing_result_is_broken(
    tmp_path: Path, gh: FakeGitHub, index: PipIndex
) -> None:
    cells = [
        (target("1.32.0", "latest", opset=17), True),
        (target("1.32.0", "latest", opset=18), None),  # the job crashed: no result
        (target("1.32.0", "latest", provider="openvino"), False),
    ]
    results, plan = write_night(tmp_path, cells)
    out = command.run(
        [results],
        read_plan(plan),
        Night("n1"),
        releases=lambda *_: [],
        client=Client(server.TOKEN, gh.url),
        repo=REPO,
    )
    assert out.decided.broken == ("cpu-op17-dynamo@latest", "cpu-op18-dynamo@latest")
    titles = sorted(i["title"] for i in gh.state.issues.values())
    assert titles == [
        "onnx-gate nightly: cpu-op17-dynamo@latest fails on onnxruntime 1.32.0",
        "onnx-gate nightly: cpu-op18-dynamo@latest fails on onnxruntime 1.32.0",
    ]
    crashed = next(i for i in gh.state.issues.values() if "op18" in i["title"])["body"]
    assert "no result arrived" in crashed


def test_a_pull_request_or_a_hand_edited_body_is_handled(
    tmp_path: Path, gh: FakeGitHub, index: PipIndex
) -> None:
    client = Client(server.TOKEN, gh.url)
    marker = "<!-- onnx-gate:nightly:cpu-op17-dynamo@latest -->"
    pr = client.request("POST", f"{REPO.path}/issues", json={"title": "PR", "body": f"quoting {marker}"}).data
    gh.state.pulls.add(pr["number"])
    night(tmp_path, gh, index, "n1", [("1.32.0", "latest", True)])
    opened = max(gh.state.issues)
    assert opened != pr["number"]
    gh.state.issues[opened]["body"] = f"{marker}\nsomeone rewrote this and dropped the state"
    night(tmp_path, gh, index, "n2", [("1.32.0", "latest", True)])
    assert len(gh.state.issues) == 2  # the PR and one issue: commented on, not opened again
    assert "nightly-state" in gh.state.issues[opened]["body"]


def test_github_refusing_one_family_does_not_stop_the_others(
    tmp_path: Path, gh: FakeGitHub, index: PipIndex
) -> None:
    gh.state.faults.append(Fault("POST", r"/issues$", 422, body={"message": "Validation Failed"}))
    cells = [(target("1.32.0", "latest", opset=o), True) for o in (17, 18)]
    results, plan = write_night(tmp_path, cells)
    with pytest.raises(
        EnvironmentProblem, match="cpu-op17-dynamo@latest: could not open its issue: GitHub answered 422"
    ):
        command.run(
            [results],
            read_plan(plan),
            Night("n1"),
            releases=lambda *_: [],
            client=Client(server.TOKEN, gh.url, retry=RetryPolicy(attempts=1)),
            repo=REPO,
            state_file=tmp_path / "state.json",
        )
    assert [i["title"].split(": ")[1].split(" ")[0] for i in gh.state.issues.values()] == [
        "cpu-op18-dynamo@latest"
    ]
    assert (tmp_path / "state.json").exists()


def test_the_tracking_issue_is_found_past_the_first_page(
    tmp_path: Path, gh: FakeGitHub, index: PipIndex
) -> None:
    for n in range(1, 151):
        gh.state.issues[n] = {"number": n, "title": f"bug {n}", "body": "", "state": "open", "labels": []}
    night(tmp_path, gh, index, "n1", [("1.32.0", "latest", True)])
    night(tmp_path, gh, index, "n2", [("1.32.0", "latest", True)])
    assert len(gh.state.issues) == 151 and [c["issue"] for c in gh.state.comments.values()] == [151]
    listed = [r.query.get("page", "1") for r in gh.state.requests if r.operation == "issues/list-for-repo"]
    assert listed == ["1", "2", "1", "2"]
