"""A policy change approved by a label, read back from GitHub (the OpenAPI-checked stand-in): who
applied it, that nobody removed it, and that they may write and are not the author."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ci_onnx import plan as planning
from ci_onnx.contracts.gate_settings import ExpectedFailure
from ci_onnx.github.approval import approval
from ci_onnx.github.client import Client
from ci_onnx.github.context import Repo
from tests.fakegithub import server
from tests.fakegithub.server import FakeGitHub
from tests.unit.test_report_cli import SHA, _earlier_out, _pr_env, report, workspace

REPO = Repo("acme", "digits")
LABEL = "onnx-gate: policy approved"


@pytest.fixture
def gh() -> Iterator[FakeGitHub]:
    with server.running(lifetime_s=60) as fake:
        fake.state.pull_heads[7] = SHA
        fake.state.pull_authors[7] = "contributor"
        fake.state.permissions.update({"maintainer": "write", "visitor": "read", "contributor": "write"})
        yield fake
        assert fake.state.violations == []


def _approval(gh: FakeGitHub) -> tuple[str, str]:
    found = approval(Client(server.TOKEN, gh.url), REPO, 7, LABEL)
    return found.by, found.why_not


def test_a_writer_who_is_not_the_author_approves(gh: FakeGitHub) -> None:
    assert _approval(gh) == ("", "")
    gh.state.label(7, "other", "maintainer")
    gh.state.label(7, LABEL, "maintainer")
    assert _approval(gh) == ("maintainer", "")


@pytest.mark.parametrize(
    ("who", "said"),
    [("contributor", "the pull request's author"), ("visitor", "who has read access")],
)
def test_the_author_or_a_reader_cannot_approve(gh: FakeGitHub, who: str, said: str) -> None:
    gh.state.label(7, LABEL, who)
    by, why_not = _approval(gh)
    assert by == "" and said in why_not


def test_a_label_removed_since_approves_nothing(gh: FakeGitHub) -> None:
    gh.state.label(7, LABEL, "maintainer")
    gh.state.label(7, LABEL, "contributor", removed=True)
    assert _approval(gh) == ("", "")


def test_a_pull_request_that_breaks_and_adds_a_catch_all_passes_only_once_a_writer_approves(
    tmp_path: Path, gh: FakeGitHub
) -> None:
    """The base's config names the label; the head breaks two cells and adds a catch-all entry."""
    from ci_onnx.github.artifacts import ARTIFACT

    ws = workspace(tmp_path)
    head_plan = planning.read_plan(ws / "plan.json")
    catch_all = ExpectedFailure("*", "*", "we accept these", "2099-12-31", "", 0)
    (ws / "plan.json").write_text(
        planning.to_json(
            dataclasses.replace(
                head_plan, gate=dataclasses.replace(head_plan.gate, expected_failures=(catch_all,))
            )
        )
    )
    base_sha = "b" * 40
    base = _earlier_out(tmp_path / "push-run", "passing", base_sha)
    base_plan = json.loads((base / "plan.json").read_text())
    base_plan["gate"]["approval_label"] = LABEL
    (base / "plan.json").write_text(json.dumps(base_plan))
    gh.state.add_run(base_sha, artifacts={ARTIFACT: server.zip_dir(base)})
    env = _pr_env(ws, gh, base_sha)
    blocked = report(ws, env, "--baseline", "github")
    assert blocked.exit_code == 1, blocked.output
    gh.state.label(7, LABEL, "contributor")  # the author cannot approve their own loosening
    assert report(ws, env, "--baseline", "github").exit_code == 1
    gh.state.label(7, LABEL, "maintainer")
    approved = report(ws, env, "--baseline", "github")
    assert approved.exit_code == 0, approved.output
    assert "approved by @maintainer" in approved.output
    body = list(gh.state.comments.values())[-1]["body"]
    assert "approved by @\u2060maintainer" in body, body[:3000]  # a mention, escaped: nobody is pinged
