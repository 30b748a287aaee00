"""Check runs (annotations in batches of 50), commit statuses, and workflow commands."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ci_onnx.github import workflow
from ci_onnx.github.checks import Annotation, publish_check_run, publish_status
from ci_onnx.github.client import Client, Forbidden
from ci_onnx.github.context import Repo, from_env
from tests.fakegithub import server
from tests.fakegithub.server import FakeGitHub

REPO = Repo("acme", "digits")
SHA = "4f1d2c3b9a8e7f6d5c4b3a29180706f5e4d3c2b1"


@pytest.fixture
def gh() -> Iterator[FakeGitHub]:
    with server.running(lifetime_s=30) as fake:
        yield fake
        assert fake.state.violations == []


@pytest.mark.parametrize(("n", "requests"), [(0, 1), (50, 1), (51, 2), (120, 3)])
def test_annotations_go_50_per_request(gh: FakeGitHub, n: int, requests: int) -> None:
    notes = [Annotation("onnx-gate.yml", f"target {i} failed", title=f"t{i}") for i in range(n)]
    run = publish_check_run(
        Client(server.TOKEN, gh.url),
        REPO,
        sha=SHA,
        name="onnx-gate",
        success=False,
        title="x",
        summary="y",
        annotations=notes,
    )
    assert run.requests == requests
    assert [a["message"] for a in gh.state.annotations[run.id]] == [a.message for a in notes]
    stored = gh.state.check_runs[run.id]
    assert stored["conclusion"] == "failure" and stored["head_sha"] == SHA


def test_a_commit_status_description_is_cut_to_140(gh: FakeGitHub) -> None:
    publish_status(
        Client(server.TOKEN, gh.url), REPO, sha=SHA, context="onnx-gate", success=True, description="d" * 300
    )
    status = gh.state.statuses[0]
    assert status["state"] == "success" and len(status["description"]) == 140


def test_checks_forbidden_raises_forbidden(gh: FakeGitHub) -> None:
    gh.state.checks_forbidden = True
    with pytest.raises(Forbidden):
        publish_check_run(
            Client(server.TOKEN, gh.url), REPO, sha=SHA, name="n", success=True, title="t", summary="s"
        )


def test_workflow_command_escaping() -> None:
    line = workflow.annotation("error", "50%\nof nodes", title="a: b, c", file="onnx-gate.yml", line=1)
    assert line == "::error file=onnx-gate.yml,line=1,title=a%3A b%2C c::50%25%0Aof nodes"


def test_outputs_and_summary_files(tmp_path: Path) -> None:
    out = tmp_path / "out"
    workflow.set_outputs(out, {"verdict": "fail", "report": "a\nb"})
    text = out.read_text()
    assert text.startswith("verdict<<ghadelim_") and "\na\nb\n" in text
    summary = tmp_path / "summary"
    workflow.append_summary(summary, "# one")
    workflow.append_summary(summary, "# two\n")
    assert summary.read_text() == "# one\n# two\n"
    with pytest.raises(ValueError, match="limit"):
        workflow.append_summary(summary, "x" * (workflow.MAX_JOB_SUMMARY_BYTES + 1))


def test_context_from_a_pull_request_event(tmp_path: Path) -> None:
    event = tmp_path / "event.json"
    event.write_text(
        '{"pull_request": {"number": 42, "head": {"sha": "abc", "repo": {"full_name": "fork/digits"}}}}'
    )
    ctx = from_env(
        {
            "GITHUB_EVENT_PATH": str(event),
            "GITHUB_REPOSITORY": "acme/digits",
            "GITHUB_SHA": "merge",
            "GITHUB_RUN_ID": "9",
        },
        token="secret",
    )
    assert (ctx.pr_number, ctx.sha, ctx.from_fork) == (42, "abc", True)
    assert ctx.run_url == "https://github.com/acme/digits/actions/runs/9"
    assert "secret" not in repr(ctx)


def test_context_from_a_workflow_run_event(tmp_path: Path) -> None:
    event = tmp_path / "event.json"
    event.write_text('{"workflow_run": {"head_sha": "def", "pull_requests": [{"number": 5}]}}')
    ctx = from_env({"GITHUB_EVENT_PATH": str(event), "GITHUB_REPOSITORY": "acme/digits"})
    assert (ctx.pr_number, ctx.sha) == (5, "def")


def test_a_local_run_has_no_github() -> None:
    ctx = from_env({})
    assert not ctx.can_publish and ctx.pr_number is None and ctx.run_url == ""


def test_a_create_that_github_performed_but_answered_502_makes_one_check_run(gh: FakeGitHub) -> None:
    """The proxy lost GitHub's answer after the run was made: posting again would make a second run
    that can never be deleted; the run is looked up by its external_id instead, and updated."""
    from tests.fakegithub.server import Fault

    gh.state.faults.append(Fault("POST", "/check-runs$", 502, after=True))
    run = publish_check_run(
        Client(server.TOKEN, gh.url), REPO, sha=SHA, name="onnx-gate", success=False, title="t", summary="s"
    )
    assert len(gh.state.check_runs) == 1
    assert gh.state.check_runs[run.id]["conclusion"] == "failure"
