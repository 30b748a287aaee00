"""A fork's result files are claims: the trusted side verifies its bundles again and judges those.

Attempt 4 of the integrity issue: a fork's run uploads a fabricated "passed" result, or a plan that
claims a skip or a model unchanged since the base; the trusted report must not be turned green by any
of them. The end-to-end path (act, the fork-safe pair) is tests/e2e/test_workflows_act.py."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from click.testing import CliRunner

from ci_onnx.cli import cli
from ci_onnx.contracts.results import TargetResult, write_result
from ci_onnx.contracts.target import Target
from ci_onnx.plan import to_json
from ci_onnx.report import fork, gate
from ci_onnx.report.collect import merge
from ci_onnx.verify import reverify
from tests.golden import scenarios
from tests.unit.test_report_gate import failed


def _with(plan_targets: list[Target], *extra: Target) -> tuple[Target, ...]:
    return (*plan_targets, *extra)


def test_select_rebuilds_each_cell_from_its_id_and_names_what_it_cannot_run() -> None:
    plan, _ = scenarios.all_passing()
    node = Target.from_id("node-ort1.20.1-cpu-op17-dynamo")
    gpu = dataclasses.replace(plan.targets[0], provider="cuda")
    claimed_skip = dataclasses.replace(plan.targets[1], expected_skip="the fork says so")
    targets = [claimed_skip if t.id == claimed_skip.id else t for t in plan.targets]
    chosen, record = reverify.select(_with(targets, node, gpu))
    ids = {t.id for t in chosen}
    assert claimed_skip.id in ids and all(
        not t.expected_skip for t in chosen
    )  # the fork's skip is not believed
    assert {t.provider for t in chosen} == {"cpu", "openvino"}
    assert "set-up of their own" in record.not_reverified[node.id]
    assert "self-hosted" in record.not_reverified[gpu.id]
    skipped = {t.id for t in plan.targets if t.expected_skip}
    assert set(record.expected_skips) == skipped and "opset <= 21" in next(
        iter(record.expected_skips.values())
    )
    again = reverify.Record(**{k: v for k, v in json.loads(record.to_json()).items() if k != "schema"})
    assert (tuple(again.reverified), dict(again.not_reverified)) == (record.reverified, record.not_reverified)


def _judged(
    fork_results: list[TargetResult],
    trusted: list[TargetResult],
    record: reverify.Record,
    accept: bool = False,
) -> gate.Gate:
    plan, _ = scenarios.all_passing()
    plan = fork.trusted_plan(plan)
    collection, _ = fork.judge(
        merge({r.target.id: r for r in fork_results}, plan),
        merge({r.target.id: r for r in trusted}, plan),
        record,
        accept=accept,
    )
    return gate.decide(collection, plan)


def test_a_fabricated_pass_is_replaced_by_the_trusted_verdict() -> None:
    plan, results = scenarios.all_passing()
    _, record = reverify.select(plan.targets)
    broken = results[0].target.id
    trusted = [failed(r) if r.target.id == broken else r for r in results]
    g = _judged(results, trusted, record)  # the fork says everything passed
    assert {c.target.id for c in g.blocking} == {broken}
    honest = _judged(trusted, trusted, record)
    assert {c.target.id for c in honest.blocking} == {broken}
    assert not _judged(results, results, record).blocks


def test_a_pass_nobody_verified_again_blocks_unless_the_base_accepts_fork_results() -> None:
    plan, results = scenarios.all_passing()
    unverified = results[0].target.id
    _, record = reverify.select(plan.targets)
    record = dataclasses.replace(
        record,
        reverified=tuple(i for i in record.reverified if i != unverified),
        not_reverified={unverified: "the web runner's cells need a set-up of their own"},
    )
    trusted = [r for r in results if r.target.id != unverified]
    g = _judged(results, trusted, record)
    assert [c.target.id for c in g.blocking] == [unverified]
    assert not _judged(results, trusted, record, accept=True).blocks
    # a failure the fork reports of itself is believed, accepted or not
    own_failure = [failed(r) if r.target.id == unverified else r for r in results]
    assert [c.target.id for c in _judged(own_failure, trusted, record, accept=True).blocking] == [unverified]


def test_no_record_means_nothing_was_verified_again(tmp_path: Path) -> None:
    record = reverify.read(tmp_path)
    assert record.lost and not record.reverified
    _, results = scenarios.all_passing()
    assert len(_judged(results, [], record).blocking) == len(results)


def test_a_plan_cannot_borrow_the_bases_results_or_invent_a_skip() -> None:
    plan, _ = scenarios.all_passing()
    claimed = dataclasses.replace(
        plan,
        targets=tuple(dataclasses.replace(t, expected_skip="claimed") for t in plan.targets),
        models=tuple(dataclasses.replace(m, unchanged_since="f" * 40) for m in plan.models),
    )
    _, record = reverify.select(claimed.targets)
    trusted = fork.trusted_plan(claimed)
    assert {t.id for t in trusted.targets if t.expected_skip} == set(record.expected_skips)
    assert not any(m.unchanged_since for m in trusted.models)


def test_report_judges_the_reverified_results_and_says_so(tmp_path: Path) -> None:
    plan, results = scenarios.all_passing()
    (tmp_path / "plan.json").write_text(to_json(plan))
    chosen, record = reverify.select(plan.targets)
    broken = results[0].target.id
    for r in results:  # the fork's run: every cell passed
        write_result(tmp_path / "fork", r)
    trusted = tmp_path / "reverified"
    trusted.mkdir()
    (trusted / reverify.RECORD).write_text(record.to_json())
    for r in results:
        write_result(trusted, failed(r) if r.target.id == broken else r)
    args = ["report", "--results", str(tmp_path / "fork"), "--plan", str(tmp_path / "plan.json")]
    done = CliRunner().invoke(cli, [*args, "--out", str(tmp_path / "out"), "--reverified", str(trusted)])
    assert done.exit_code == 1, done.output
    assert f"{len(chosen)} of {len(chosen)} cells verified again" in done.output
    assert f"{broken} (passed in the fork's run, failed here)" in done.output
    report = (tmp_path / "out" / "report.md").read_text()
    assert "verified again by the trusted workflow" in report
    gone = CliRunner().invoke(
        cli, [*args, "--out", str(tmp_path / "out2"), "--reverified", str(tmp_path / "never-written")]
    )
    assert gone.exit_code == 1 and "wrote no reverified.json" in gone.output, gone.output
