"""What a pull request cannot hide: a glob that covers a died job or a crash, an error of another
kind called "known", a known failure that got much worse called "known"."""

from __future__ import annotations

import dataclasses
import datetime

from ci_onnx.contracts.gate_settings import ExpectedFailure
from ci_onnx.contracts.results import CheckResult, TargetResult
from ci_onnx.contracts.target import Status
from ci_onnx.report import gate
from ci_onnx.report.collect import merge
from tests.golden import scenarios
from tests.unit.test_report_gate import baseline_of, failed

TODAY = datetime.date(2026, 12, 1)
CATCH_ALL = ExpectedFailure("*", "*", "known flakiness", "2099-12-31", "", 0)


def _errored(r: TargetResult, check: str, message: str) -> TargetResult:
    return dataclasses.replace(
        r, status=Status.ERROR, summary=message, checks=(CheckResult(check, Status.ERROR, message),)
    )


def test_a_glob_covers_no_missing_target_and_no_error() -> None:
    plan, results = scenarios.all_passing()
    gone, crashed = results[0].target.id, results[1].target.id
    rows = [_errored(r, "runner", "the runner process failed: killed by SIGSEGV") if r.target.id == crashed else r
            for r in scenarios.without(results, gone)]  # fmt: skip
    collection = merge({r.target.id: r for r in rows}, plan)
    for entry in (
        CATCH_ALL,
        dataclasses.replace(CATCH_ALL, check="missing"),
        dataclasses.replace(CATCH_ALL, check="runner"),
    ):
        g = gate.decide(collection, plan, ledger_entries=(entry,), today=TODAY)
        assert {c.target.id for c in g.blocking} == {gone, crashed}, entry
    named = (
        ExpectedFailure(gone, "missing", "the runner is being replaced", "2026-12-31", "", 0),
        ExpectedFailure(crashed, "runner", "onnxruntime#123", "2026-12-31", "", 1),
    )
    assert not gate.decide(collection, plan, ledger_entries=named, today=TODAY).blocks


def test_all_verify_jobs_died_and_a_catch_all_ledger_still_blocks() -> None:
    plan, _ = scenarios.all_passing()
    collection = merge({}, plan)
    g = gate.decide(collection, plan, ledger_entries=(CATCH_ALL,), today=TODAY)
    assert g.blocks and len(g.blocking) == len([t for t in plan.targets if not t.expected_skip])


def test_an_error_is_known_only_when_its_kind_is_the_bases() -> None:
    plan, results = scenarios.all_passing()
    tid = results[0].target.id
    timeout = "the runner process failed: timed out after 300 s"
    crash = "the runner process failed: killed by SIGSEGV"
    base = baseline_of(plan, [_errored(r, "runner", timeout) if r.target.id == tid else r for r in results])
    for head_message, blocks in ((timeout, False), (crash, True)):
        head = [_errored(r, "runner", head_message) if r.target.id == tid else r for r in results]
        g = gate.decide(merge({r.target.id: r for r in head}, plan), plan, base, mode=gate.Mode.REGRESSION)
        cell = g.cell(tid)
        assert cell is not None and cell.blocks is blocks, cell
    assert gate.error_kind(_errored(results[0], "environment", "no such release")) == "environment"


def _parity_failure(r: TargetResult, share: float) -> TargetResult:
    worst = dataclasses.replace(r.parity[0], max_abs=share * 1e-4, out_of_tolerance=37, worst_share=share)
    return dataclasses.replace(failed(r), parity=(worst, *r.parity[1:]))


def test_a_known_failure_that_got_much_worse_blocks_as_known_worse() -> None:
    plan, results = scenarios.all_passing()
    tid = results[0].target.id
    base = baseline_of(plan, [_parity_failure(r, 1.2) if r.target.id == tid else r for r in results])
    for share, blocks in ((1.2, False), (1.3, False), (60_000.0, True)):
        head = [_parity_failure(r, share) if r.target.id == tid else r for r in results]
        g = gate.decide(merge({r.target.id: r for r in head}, plan), plan, base, mode=gate.Mode.REGRESSION)
        cell = g.cell(tid)
        assert cell is not None and cell.blocks is blocks, (share, cell.why)
        if blocks:
            assert cell.why.startswith("known on the base 0123456, worse: parity[")
            assert "6e+04× its tolerance, 1.2× on the base" in cell.why


def test_more_decisions_changed_than_on_the_base_is_worse() -> None:
    _, results = scenarios.all_passing()
    r = results[0]
    assert r.decisions is not None
    base_r = dataclasses.replace(failed(r, "decision"), decisions=dataclasses.replace(r.decisions, changed=1))
    head_r = dataclasses.replace(failed(r, "decision"), decisions=dataclasses.replace(r.decisions, changed=9))
    assert gate.worse(head_r, base_r, 0.25).startswith("9 of ")
    assert gate.worse(base_r, base_r, 0.25) == ""
