"""The trusted job posts for a pull request only once GitHub confirms it is at the run's head."""

from __future__ import annotations

import pytest

from ci_onnx.action import pr_context
from ci_onnx.contracts.errors import UsageError
from tests.fakegithub import server as fake

SHA = "a" * 40


def test_a_pull_request_at_the_head_passes_and_another_head_is_refused() -> None:
    with fake.running() as github:
        base = {"GITHUB_REPOSITORY": "acme/digits", "GITHUB_API_URL": github.url}
        environ = dict(base)
        github.state.pull_heads[3] = SHA
        pr_context.apply("3", SHA, environ, fake.TOKEN)
        assert environ["GITHUB_EVENT_NAME"] == "pull_request" and environ["GITHUB_SHA"] == SHA
        github.state.pull_heads[3] = "b" * 40
        with pytest.raises(UsageError, match=f"pull request 3 is at {'b' * 40}, not at the run's head {SHA}"):
            pr_context.apply("3", SHA, dict(base), fake.TOKEN)
        with pytest.raises(UsageError, match="could not read pull request 4 of acme/digits"):
            pr_context.apply("4", SHA, dict(base), fake.TOKEN)
    assert not github.state.violations


def test_the_trusted_jobs_event_names_the_base_as_github_says_it_not_as_the_fork_does() -> None:
    """The report of the fork-safe pair reads the base commit's baseline for its policy: the base it
    looks for comes from GitHub's answer about the pull request, never from the fork's artifact."""
    import json
    from pathlib import Path

    with fake.running() as github:
        environ = {"GITHUB_REPOSITORY": "acme/digits", "GITHUB_API_URL": github.url}
        github.state.pull_heads[3] = SHA
        github.state.pull_bases[3] = ("c" * 40, "main")
        pr_context.apply("3", SHA, environ, fake.TOKEN)
        event = json.loads(Path(environ["GITHUB_EVENT_PATH"]).read_text())
    assert event["pull_request"]["base"] == {"sha": "c" * 40, "ref": "main"}
    assert not github.state.violations
