"""Collecting TargetResults from nested artifact folders and lining them up with the plan."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from ci_onnx.contracts import serde
from ci_onnx.contracts.errors import UsageError
from ci_onnx.contracts.results import write_result
from ci_onnx.contracts.target import Status
from ci_onnx.report.collect import collect, merge
from tests.golden import scenarios


def write_artifacts(root: Path, results: list) -> None:
    """As `actions/download-artifact` leaves them: one folder per job, results/ inside."""
    for r in results:
        write_result(root / f"onnx-gate-{r.target.id}" / "results", r)


def test_every_planned_target_is_found_recursively(tmp_path: Path) -> None:
    plan, results = scenarios.tinycnn()
    write_artifacts(tmp_path, results)
    (tmp_path / "plan.json").write_text(json.dumps({"schema_version": 1, "targets": []}))  # ignored
    got = collect([tmp_path], plan)
    outcomes = {e.target.id: e.outcome for e in got.entries}
    assert len(outcomes) == 14 and not got.problems
    assert outcomes[scenarios.PARITY_FAIL] is Status.FAILED
    assert outcomes[scenarios.FALLBACK_FAIL] is Status.FAILED
    assert sum(o is Status.EXPECTED for o in outcomes.values()) == 2
    assert sum(o is Status.PASSED for o in outcomes.values()) == 10


def test_a_target_without_result_is_missing_and_blocks(tmp_path: Path) -> None:
    plan, results = scenarios.all_passing()
    write_artifacts(tmp_path, scenarios.without(results, "ort1.32.0-cpu-op18-dynamo"))
    got = collect([tmp_path], plan)
    missing = [e for e in got.entries if e.outcome is Status.MISSING]
    assert [e.target.id for e in missing] == ["ort1.32.0-cpu-op18-dynamo"]
    assert missing[0].outcome.failing and "cancelled or crashed" in missing[0].reason


def test_without_a_plan_missing_targets_cannot_be_known(tmp_path: Path) -> None:
    _, results = scenarios.all_passing()
    write_artifacts(tmp_path, results[:3])
    got = collect([tmp_path])
    assert [e.outcome for e in got.entries] == [Status.PASSED] * 3


def test_an_unreadable_result_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    plan, results = scenarios.all_passing()
    write_artifacts(tmp_path, results)
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"schema_version": 1, "target": {"runtime": "1"}, "status": "passed"}))
    got = collect([tmp_path], plan)
    assert len(got.problems) == 1 and "broken.json" in got.problems[0]


def test_the_later_of_two_results_for_one_target_wins(tmp_path: Path) -> None:
    plan, results = scenarios.all_passing()
    first = results[0]
    rerun = dataclasses.replace(first, started_at="2026-11-29T22:00:00Z", summary="rerun")
    write_result(tmp_path / "a", first)
    write_result(tmp_path / "b", rerun)
    got = collect([tmp_path], plan)
    entry = next(e for e in got.entries if e.target.id == first.target.id)
    assert entry.reason == "rerun"


def test_results_the_plan_lacks_are_kept() -> None:
    plan, results = scenarios.all_passing()
    small = dataclasses.replace(plan, targets=plan.targets[:2])
    got = merge({r.target.id: r for r in results}, small)
    assert len(got.entries) == len(results)


def test_an_expected_skip_that_ran_and_passed_is_flagged_as_stale() -> None:
    plan, results = scenarios.all_passing()
    skip = plan.targets[-1]
    assert skip.expected_skip
    ran = dataclasses.replace(results[0], target=dataclasses.replace(skip, expected_skip=""))
    got = merge({r.target.id: r for r in [*results, ran]}, plan)
    entry = next(e for e in got.entries if e.target.id == skip.id)
    assert entry.outcome is Status.EXPECTED and "may be stale" in entry.reason


def test_with_a_plan_a_results_directory_that_never_arrived_is_reported_not_refused(tmp_path: Path) -> None:
    """Every verify job died, so no artifact was downloaded: the report must still say so, and block."""
    plan, _ = scenarios.tinycnn()
    collection = collect([tmp_path / "collected"], plan)
    assert any("no such file or directory" in p for p in collection.problems)
    assert {e.outcome.value for e in collection.entries} == {"missing", "expected"}
    with pytest.raises(UsageError, match="no such file or directory"):
        collect([tmp_path / "collected"], None)


@pytest.mark.parametrize("planned", [True, False])
def test_a_truncated_result_blocks_with_or_without_a_plan(tmp_path: Path, planned: bool) -> None:
    """The failing target must not vanish: its unreadable file is a problem listed by name."""
    plan, results = scenarios.all_passing()
    write_artifacts(tmp_path, results[1:])
    text = serde.dumps(results[0])
    (tmp_path / "cut.json").write_text(text[: len(text) // 2])
    got = collect([tmp_path], plan if planned else None)
    assert len(got.problems) == 1 and "cut.json" in got.problems[0] and "not valid JSON" in got.problems[0]


@pytest.mark.parametrize("version", [99, 0, "1", None])
def test_an_unknown_schema_version_is_a_problem(tmp_path: Path, version: object) -> None:
    _, results = scenarios.all_passing()
    write_artifacts(tmp_path, results[:1])
    path = next(tmp_path.rglob("*.json"))
    data = json.loads(path.read_text())
    data["schema_version"] = version
    path.write_text(json.dumps(data))
    got = collect([tmp_path])
    assert len(got.problems) == 1 and "schema_version" in got.problems[0] and not got.entries


def test_two_results_that_disagree_are_a_problem_and_the_worse_shows(tmp_path: Path) -> None:
    from ci_onnx.contracts.target import Status

    _, results = scenarios.all_passing()
    first = results[0]
    failing = dataclasses.replace(first, status=Status.FAILED, summary="older, failing", started_at="1")
    passing = dataclasses.replace(first, started_at="2")
    write_result(tmp_path / "a", failing)
    write_result(tmp_path / "b", passing)
    got = collect([tmp_path])
    assert len(got.problems) == 1 and "disagree" in got.problems[0]
    assert got.entries[0].outcome is Status.FAILED
