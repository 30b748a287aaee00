"""`onnx-gate report` end to end: artifacts and plan in, comment, check, summary and exit code out."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from ci_onnx import plan as planning
from ci_onnx.cli import cli
from ci_onnx.contracts.results import write_result
from tests.fakegithub import server
from tests.fakegithub.server import FakeGitHub
from tests.golden import scenarios

SHA = "4f1d2c3b9a8e7f6d5c4b3a29180706f5e4d3c2b1"


@pytest.fixture
def gh() -> Iterator[FakeGitHub]:
    with server.running(lifetime_s=60) as fake:
        yield fake
        assert fake.state.violations == []


@pytest.fixture(autouse=True)
def no_ambient_github(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests that run inside GitHub Actions must not see that job's own context."""
    for key in list(os.environ):
        if key.startswith("GITHUB_"):
            monkeypatch.delenv(key)


def workspace(tmp_path: Path, kind: str = "tinycnn") -> Path:
    the_plan, results = scenarios.tinycnn() if kind == "tinycnn" else scenarios.all_passing()
    for r in results:
        write_result(tmp_path / "artifacts" / f"onnx-gate-{r.target.id}" / "results", r)
    (tmp_path / "plan.json").write_text(planning.to_json(the_plan))
    return tmp_path


def actions_env(tmp_path: Path, gh: FakeGitHub, *, fork: bool = False) -> dict[str, str]:
    head_repo = "someone/digits" if fork else "acme/digits"
    event = {"pull_request": {"number": 7, "head": {"sha": SHA, "repo": {"full_name": head_repo}}}}
    (tmp_path / "event.json").write_text(json.dumps(event))
    return {
        "GITHUB_ACTIONS": "true",
        "GITHUB_TOKEN": server.TOKEN,
        "GITHUB_REPOSITORY": "acme/digits",
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(tmp_path / "event.json"),
        "GITHUB_SHA": "0" * 40,
        "GITHUB_API_URL": gh.url,
        "GITHUB_RUN_ID": "7001",
        "GITHUB_STEP_SUMMARY": str(tmp_path / "step-summary.md"),
        "GITHUB_OUTPUT": str(tmp_path / "output.txt"),
    }


def report(tmp_path: Path, env: dict[str, str] | None = None, *extra: str) -> Result:
    args = ["report", "--results", str(tmp_path / "artifacts"), "--plan", str(tmp_path / "plan.json")]
    args += ["--out", str(tmp_path / "out"), *extra]
    return CliRunner().invoke(cli, args, env=env or {}, catch_exceptions=False)


def test_twelve_targets_comment_check_summary_and_exit_code(tmp_path: Path, gh: FakeGitHub) -> None:
    ws = workspace(tmp_path)
    env = actions_env(ws, gh)
    result = report(ws, env)
    assert result.exit_code == 1, result.output
    assert "❌ 2 of 12 targets failed" in result.output
    (comment,) = gh.state.comments.values()
    assert comment["body"].startswith("<!-- onnx-gate:report -->\n## ❌ onnx-gate: 2 of 12 targets failed")
    assert "[`4f1d2c3`](https://github.com/acme/digits/commit/" + SHA in comment["body"]
    (run_id, run) = next(iter(gh.state.check_runs.items()))
    assert run["head_sha"] == SHA and run["conclusion"] == "failure"
    assert [a["title"] for a in gh.state.annotations[run_id]] == [
        f"{scenarios.PARITY_FAIL} failed",
        f"{scenarios.FALLBACK_FAIL} failed",
    ]
    assert "2 of 12 targets failed" in (ws / "step-summary.md").read_text()
    assert "verdict<<" in (ws / "output.txt").read_text()
    assert f"::error title={scenarios.PARITY_FAIL} failed::" in result.output
    assert (ws / "out" / "report.md").exists()
    assert server.TOKEN not in result.output

    again = report(ws, env)
    assert again.exit_code == 1
    assert len(gh.state.comments) == 1 and next(iter(gh.state.comments)) == comment["id"]
    assert [q.operation for q in gh.state.requests].count("issues/update-comment") == 1
    assert "updated the report comment" in again.output


def test_a_passing_run_exits_0(tmp_path: Path, gh: FakeGitHub) -> None:
    ws = workspace(tmp_path, "passing")
    result = report(ws, actions_env(ws, gh))
    assert result.exit_code == 0, result.output
    assert next(iter(gh.state.check_runs.values()))["conclusion"] == "success"


def test_a_missing_target_fails_the_gate(tmp_path: Path, gh: FakeGitHub) -> None:
    ws = workspace(tmp_path, "passing")
    (
        ws
        / "artifacts"
        / "onnx-gate-ort1.32.0-cpu-op18-dynamo"
        / "results"
        / "ort1.32.0-cpu-op18-dynamo.json"
    ).unlink()
    result = report(ws, actions_env(ws, gh))
    assert result.exit_code == 1
    assert "⚠️ 1 missing" in next(iter(gh.state.comments.values()))["body"]


def test_a_forks_read_only_token_crashes_nothing(tmp_path: Path, gh: FakeGitHub) -> None:
    gh.state.read_only = True
    ws = workspace(tmp_path)
    result = report(ws, actions_env(ws, gh, fork=True))
    assert result.exit_code == 1  # the gate's verdict, not an error
    assert "::warning title=onnx-gate::" in result.output and "workflow_run" in result.output
    assert "2 of 12 targets failed" in (ws / "step-summary.md").read_text()
    assert not gh.state.comments and not gh.state.check_runs and not gh.state.statuses


def test_a_commit_status_where_check_runs_are_not_allowed(tmp_path: Path, gh: FakeGitHub) -> None:
    gh.state.checks_forbidden = True
    ws = workspace(tmp_path)
    result = report(ws, actions_env(ws, gh))
    assert result.exit_code == 1
    (status,) = gh.state.statuses
    assert status["state"] == "failure" and status["context"] == "onnx-gate" and status["sha"] == SHA


def test_a_refused_check_run_is_a_warning_and_the_verdict_still_counts(
    tmp_path: Path, gh: FakeGitHub
) -> None:
    gh.state.faults.append(server.Fault("POST", "/check-runs$", 422, body={"message": "Validation Failed"}))
    ws = workspace(tmp_path, "passing")
    result = report(ws, actions_env(ws, gh))
    assert result.exit_code == 0
    assert "could not create the check run" in result.output and "Validation Failed" in result.output


def test_a_local_run_sends_nothing(tmp_path: Path, gh: FakeGitHub) -> None:
    ws = workspace(tmp_path)
    result = report(ws, {"GITHUB_API_URL": gh.url})
    assert result.exit_code == 1
    assert gh.state.requests == []
    assert "::" not in result.output
    assert (ws / "out" / "report.md").read_text().startswith("## ❌ onnx-gate: 2 of 12 targets failed")
    assert (ws / "out" / "summary.md").exists()


def test_junit_failures_from_other_tools_block(tmp_path: Path) -> None:
    ws = workspace(tmp_path, "passing")
    junit = Path(__file__).parent.parent / "data" / "junit" / "junit.fail.xml"
    result = report(ws, {}, "--junit", str(junit))
    assert result.exit_code == 1
    assert "1 other test(s) failed" in result.output


def test_a_results_directory_that_does_not_exist_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["report", "--results", str(tmp_path / "nope")])
    assert result.exit_code == 2 and "no such file or directory" in result.output


def test_a_refused_annotation_still_leaves_a_check(tmp_path: Path, gh: FakeGitHub) -> None:
    gh.state.faults.append(server.Fault("POST", "/check-runs$", 422, body={"message": "Invalid path"}))
    ws = workspace(tmp_path)
    result = report(ws, actions_env(ws, gh))
    assert result.exit_code == 1
    (run_id, run) = next(iter(gh.state.check_runs.items()))
    assert run["conclusion"] == "failure" and gh.state.annotations[run_id] == []
    assert "retrying without them" in result.output


def _earlier_out(directory: Path, kind: str, commit: str) -> Path:
    """What an earlier `onnx-gate run --out DIR` left: results/, plan.json, baseline.json."""
    from ci_onnx.report import baseline
    from ci_onnx.report.collect import merge

    the_plan, results = scenarios.tinycnn() if kind == "tinycnn" else scenarios.all_passing()
    for r in results:
        write_result(directory / "results", r)
    (directory / "plan.json").write_text(planning.to_json(the_plan))
    baseline.write_meta(
        directory, commit, baseline.bundles_of(merge({r.target.id: r for r in results}, the_plan))
    )
    return directory


def test_report_against_an_earlier_out_blocks_on_what_changed_only(tmp_path: Path) -> None:
    ws = workspace(tmp_path)  # the head: a parity failure and a fallback failure
    healthy = _earlier_out(tmp_path / "base-healthy", "passing", "a" * 40)
    result = report(ws, None, "--no-publish", "--baseline", str(healthy))
    assert result.exit_code == 1, result.output
    assert (
        "onnx-gate: regression mode (what changed against the base blocks; a comparison with a baseline)"
        in result.output
    )
    assert f"compared with `aaaaaaa` (--baseline {healthy})" in result.output
    assert "❌ 2 regressions, 0 fixed, 10 unchanged" in result.output
    same = _earlier_out(tmp_path / "base-same", "tinycnn", "b" * 40)
    known = report(ws, None, "--no-publish", "--baseline", str(same))
    assert known.exit_code == 0, known.output
    assert "✅ 0 regressions, 0 fixed, 12 unchanged (2 known failures)" in known.output
    text = (ws / "out" / "report.md").read_text()
    assert "2 known or expected failure(s), not blocking" in text and "| vs base |" in text


def test_a_baseline_that_is_not_an_earlier_out_is_one_line(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    (tmp_path / "empty").mkdir()
    result = CliRunner().invoke(
        cli,
        [
            "report",
            "--results",
            str(ws / "artifacts"),
            "--out",
            str(ws / "out"),
            "--baseline",
            str(tmp_path / "empty"),
        ],
    )
    assert result.exit_code == 2
    assert (
        f"--baseline {tmp_path / 'empty'}: holds no results; give the --out of an earlier `onnx-gate run`"
        in result.output
    )


def _pr_env(ws: Path, gh: FakeGitHub, base_sha: str) -> dict[str, str]:
    env = actions_env(ws, gh)
    event = json.loads((ws / "event.json").read_text())
    event["pull_request"]["base"] = {"sha": base_sha, "ref": "main", "repo": {"full_name": "acme/digits"}}
    (ws / "event.json").write_text(json.dumps(event))
    return env


def test_report_finds_the_base_commits_baseline_artifact_through_the_api(
    tmp_path: Path, gh: FakeGitHub
) -> None:
    from ci_onnx.github.artifacts import ARTIFACT

    ws = workspace(tmp_path)
    base_sha = "b" * 40
    same = _earlier_out(tmp_path / "push-run", "tinycnn", base_sha)  # the base had the same two failures
    rid = gh.state.add_run(base_sha, artifacts={ARTIFACT: server.zip_dir(same)})
    result = report(ws, _pr_env(ws, gh, base_sha), "--baseline", "github")
    assert result.exit_code == 0, result.output
    assert (
        "onnx-gate: regression mode (what changed against the base blocks; a pull request with a baseline); "
        f"compared with `bbbbbbb` (the onnx-gate-baseline artifact of run {rid} (push to main))"
    ) in result.output
    assert next(iter(gh.state.check_runs.values()))["conclusion"] == "success"
    assert (
        "0 regressions, 0 fixed, 12 unchanged (2 known failures)"
        in next(iter(gh.state.comments.values()))["body"]
    )


def test_without_a_baseline_on_github_the_pull_request_is_judged_absolutely_and_says_why(
    tmp_path: Path, gh: FakeGitHub
) -> None:
    ws = workspace(tmp_path)
    result = report(ws, _pr_env(ws, gh, "b" * 40), "--baseline", "github")
    assert result.exit_code == 1
    assert (
        "onnx-gate: absolute mode (every failure blocks; no baseline: no run of the base commit bbbbbbb"
        in result.output
    )
    body = next(iter(gh.state.comments.values()))["body"]
    assert (
        "_Judged in absolute mode (every failure blocks; no baseline: no run of the base commit bbbbbbb"
        in body
    )


@pytest.mark.parametrize("broken", ["no results", "another schema"])
def test_a_baseline_artifact_that_cannot_be_read_still_gets_a_check_judged_absolutely(
    tmp_path: Path, gh: FakeGitHub, broken: str
) -> None:
    """The artifact of a base push whose verify jobs all died (a plan, no results), or one an
    upgrade of onnx-gate wrote: one plain line, the pull request judged absolutely, and the check
    run and comment posted (they made report exit 2: no check, a pull request waiting forever)."""
    import shutil

    from ci_onnx.github.artifacts import ARTIFACT

    ws = workspace(tmp_path)
    base_sha = "b" * 40
    earlier = _earlier_out(tmp_path / "push-run", "tinycnn", base_sha)
    if broken == "no results":
        shutil.rmtree(earlier / "results")
    else:
        plan = json.loads((earlier / "plan.json").read_text())
        (earlier / "plan.json").write_text(json.dumps({**plan, "schema_version": 99}))
    gh.state.add_run(base_sha, artifacts={ARTIFACT: server.zip_dir(earlier)})
    result = report(ws, _pr_env(ws, gh, base_sha), "--baseline", "github")
    assert result.exit_code == 1, result.output  # the head's two failures, judged absolutely
    assert "cannot be read" in result.output and "absolute mode" in result.output
    (run,) = gh.state.check_runs.values()
    assert run["conclusion"] == "failure"
    assert "cannot be read" in next(iter(gh.state.comments.values()))["body"]


def test_a_baseline_that_is_the_heads_own_output_or_inside_its_results_is_refused(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    for given in (ws / "out", ws / "artifacts" / "base"):
        given.mkdir(parents=True, exist_ok=True)
        result = report(ws, None, "--no-publish", "--baseline", str(given))
        assert result.exit_code == 2, result.output
        assert f"--baseline {given}" in result.output


def test_a_baseline_from_github_is_never_unpacked_among_the_heads_results(tmp_path: Path) -> None:
    from ci_onnx.commands.report import _baseline_dest

    out = tmp_path / "onnx-gate-out"
    assert _baseline_dest(out, [out / "collected"]) == out / "baseline"
    inside = _baseline_dest(out, [out])  # results searched across the whole --out
    assert not inside.resolve().is_relative_to(out.resolve())
