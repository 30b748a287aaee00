"""`onnx-gate nightly` end to end against the fake GitHub API and a package index on loopback."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from ci_onnx.cli import cli
from tests.fakegithub import server
from tests.fakegithub.server import FakeGitHub, Fault
from tests.support import pypi
from tests.support.nights import target, write_night


@pytest.fixture
def gh() -> Iterator[FakeGitHub]:
    with server.running(lifetime_s=60) as fake:
        yield fake
        assert fake.state.violations == []


@pytest.fixture
def index_env() -> Iterator[dict[str, str]]:
    files = {"onnxruntime": [pypi.wheel_name("onnxruntime", v) for v in ("1.31.1", "1.31.2", "1.32.0")]}
    with pypi.serve(files) as url:
        env = pypi.pip_env(url)
        yield {k: env[k] for k in ("PIP_INDEX_URL", "PIP_CONFIG_FILE", "PIP_NO_CACHE_DIR")}


@pytest.fixture(autouse=True)
def no_ambient_github(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.startswith("GITHUB_"):
            monkeypatch.delenv(key)


def actions_env(tmp: Path, gh: FakeGitHub, index_env: dict[str, str]) -> dict[str, str]:
    return {
        **index_env,
        "GITHUB_ACTIONS": "true",
        "GITHUB_TOKEN": server.TOKEN,
        "GITHUB_REPOSITORY": "acme/digits",
        "GITHUB_EVENT_NAME": "schedule",
        "GITHUB_API_URL": gh.url,
        "GITHUB_RUN_ID": "9001",
        "GITHUB_SHA": "a" * 40,
        "GITHUB_STEP_SUMMARY": str(tmp / "step-summary.md"),
    }


def nightly(tmp: Path, env: dict[str, str], *extra: str, broken: bool = True) -> Result:
    cells = [(target("1.32.0"), broken), (target("1.31.1", "1.31.1"), False)]
    results, plan = write_night(tmp, cells)
    args = ["nightly", "--results", str(results), "--plan", str(plan), "--out", str(tmp / "out")]
    args += ["--state", str(tmp / "state.json"), "--date", "2026-11-29", *extra]
    return CliRunner().invoke(cli, args, env=env, catch_exceptions=False)


def test_a_red_night_opens_an_issue_and_exits_0(
    tmp_path: Path, gh: FakeGitHub, index_env: dict[str, str]
) -> None:
    result = nightly(tmp_path, actions_env(tmp_path, gh, index_env))
    assert result.exit_code == 0, result.output
    (issue,) = gh.state.issues.values()
    assert "cpu-op17-dynamo@latest: opened issue #1 https://github.com/acme/digits/issues/1" in result.output
    assert "❌ 1 broken target family: cpu-op17-dynamo@latest" in result.output
    # 1.31.2 lies between and no bundles were given: a range, not a guess
    assert "after 1.31.1 (passed), at or before 1.32.0 (fails).** Not verified yet: 1.31.2" in issue["body"]
    assert "[workflow run](https://github.com/acme/digits/actions/runs/9001)" in issue["body"]
    assert "1 of 2 targets failed" in (tmp_path / "step-summary.md").read_text()
    assert (tmp_path / "out" / "nightly.md").exists() and (tmp_path / "state.json").exists()
    assert server.TOKEN not in result.output


def test_fail_on_broken_exits_1(tmp_path: Path, gh: FakeGitHub, index_env: dict[str, str]) -> None:
    assert nightly(tmp_path, actions_env(tmp_path, gh, index_env), "--fail-on-broken").exit_code == 1
    assert len(gh.state.issues) == 1
    green = nightly(tmp_path / "g", actions_env(tmp_path, gh, index_env), "--fail-on-broken", broken=False)
    assert green.exit_code == 0 and gh.state.issues[1]["state"] == "closed"


def test_github_refusing_exits_3(tmp_path: Path, gh: FakeGitHub, index_env: dict[str, str]) -> None:
    gh.state.faults.append(Fault("POST", r"/issues$", 422, body={"message": "Validation Failed"}))
    result = nightly(tmp_path, actions_env(tmp_path, gh, index_env))
    assert result.exit_code == 3
    assert (
        "onnx-gate: error: cpu-op17-dynamo@latest: could not open its issue: GitHub answered 422"
        in result.output
    )


def test_a_dry_run_sends_nothing_and_no_token_is_a_usage_error(
    tmp_path: Path, gh: FakeGitHub, index_env: dict[str, str]
) -> None:
    dry = nightly(tmp_path, index_env, "--dry-run")
    assert dry.exit_code == 0 and "cpu-op17-dynamo@latest: would open its issue (dry run)" in dry.output
    assert gh.state.requests == []
    missing = nightly(tmp_path / "b", index_env)
    assert missing.exit_code == 2 and "nightly needs a token that may write issues" in missing.output
