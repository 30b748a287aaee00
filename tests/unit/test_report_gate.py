"""The gate decision: the one place that says what blocks, and the views that only show it."""

from __future__ import annotations

import dataclasses
from typing import Any

from ci_onnx.contracts.results import TargetResult
from ci_onnx.contracts.target import Status
from ci_onnx.plan import Plan
from ci_onnx.report import gate, render, view
from ci_onnx.report.baseline import Baseline
from ci_onnx.report.collect import Collection, merge
from tests.golden import scenarios


def judged(plan: Plan, results: list[TargetResult], **kwargs: Any) -> tuple[Collection, gate.Gate]:
    collection = merge({r.target.id: r for r in results}, plan)
    return collection, gate.decide(collection, plan, **kwargs)


def test_absolute_mode_blocks_on_every_failure_and_says_so() -> None:
    _, g = judged(*scenarios.tinycnn())
    assert g.mode is gate.Mode.ABSOLUTE and g.blocks
    assert [c.target.id for c in g.blocking] == [scenarios.PARITY_FAIL, scenarios.FALLBACK_FAIL]
    assert g.cell(scenarios.PARITY_FAIL).failing == ("parity[logits]", "decision")  # type: ignore[union-attr]
    assert all(r.endswith(gate.ABSOLUTE_WHY) for r in g.reasons)


def test_all_passing_does_not_block_and_expected_skips_are_not_judged() -> None:
    _, g = judged(*scenarios.all_passing())
    assert not g.blocks and g.reasons == () and g.judged == 12 and len(g.cells) == 14


def test_a_missing_target_an_unreadable_file_and_no_targets_at_all_each_block() -> None:
    plan, results = scenarios.all_passing()
    _, missing = judged(plan, scenarios.without(results, "ort1.20.1-cpu-op17-dynamo"))
    assert missing.blocks and missing.blocking[0].outcome is Status.MISSING
    unreadable = gate.decide(
        Collection(merge({r.target.id: r for r in results}, plan).entries, ("x.json: bad",))
    )
    assert unreadable.blocks and unreadable.reasons == ("unreadable results: x.json: bad",)
    _, empty = judged(dataclasses.replace(plan, targets=()), [])
    assert empty.blocks and empty.reasons == ("no targets reported",)


def test_other_junit_failures_block() -> None:
    plan, results = scenarios.all_passing()
    _, g = judged(plan, results, junit_failed=2)
    assert g.blocks and g.reasons == ("2 other test(s) failed",)


def test_the_view_exit_and_outputs_follow_the_gate_not_the_statuses() -> None:
    """A Gate that says "pass" over a failing result is shown as passing: views only show it."""
    collection, g = judged(*scenarios.tinycnn())
    lenient = dataclasses.replace(
        g, blocks=False, reasons=(), cells=tuple(dataclasses.replace(c, blocks=False) for c in g.cells)
    )
    v = view.build(collection, lenient)
    assert not v.blocks and v.failures == () and len(v.known) == 2
    assert render.render(v).startswith("## ✅ onnx-gate")


def test_an_export_failure_is_recognised_by_its_flag_not_the_wording_of_its_summary() -> None:
    plan, results = scenarios.all_passing()
    worded = [
        dataclasses.replace(r, status=Status.FAILED, summary="export failed upstream: but not flagged")
        if r.target.bundle_key == "op17-dynamo"
        else r
        for r in results
    ]
    flagged = [
        dataclasses.replace(
            r, status=Status.FAILED, summary="opset: asked for 17, got 18", export_failed=True
        )
        if r.target.bundle_key == "op17-dynamo"
        else r
        for r in results
    ]
    for rows, grouped in ((worded, False), (flagged, True)):
        collection, g = judged(plan, rows)
        shown = view.build(collection, g).failures
        assert any(f.target == "bundle op17-dynamo" for f in shown) is grouped, [f.target for f in shown]


# --- against a baseline: transitions per target -------------------------------------------------

BASE_SHA = "0123456789abcdef0123456789abcdef01234567"


def baseline_of(plan: Plan, results: list[TargetResult], **kwargs: Any) -> Baseline:
    return Baseline(
        BASE_SHA,
        "--baseline base-out",
        {r.target.id: r for r in results},
        planned=tuple(t.id for t in plan.targets),
        skipped=tuple(t.id for t in plan.targets if t.expected_skip),
        **kwargs,
    )


def failed(r: TargetResult, check: str = "parity[logits]") -> TargetResult:
    checks = tuple(
        dataclasses.replace(c, status=Status.FAILED, message="37 of 480 out") if c.name == check else c
        for c in r.checks
    )
    return dataclasses.replace(r, status=Status.FAILED, summary=f"{check}: 37 of 480 out", checks=checks)


def test_every_transition_against_the_base_and_what_blocks_in_regression_mode() -> None:
    plan, results = scenarios.all_passing()
    ids = [r.target.id for r in results]
    newly, still, fixed, other_check, removed = ids[0], ids[1], ids[2], ids[3], ids[4]
    base_results = [failed(r) if r.target.id in (still, fixed, other_check) else r for r in results]
    head_results = [
        failed(r)
        if r.target.id in (newly, still)
        else failed(r, "decision")
        if r.target.id == other_check
        else r
        for r in results
        if r.target.id != removed
    ]
    new_target = dataclasses.replace(results[0].target, runtime="1.33.0", runtime_spec="")
    head_results.append(failed(dataclasses.replace(results[0], target=new_target)))
    head_plan = dataclasses.replace(plan, targets=(*[t for t in plan.targets if t.id != removed], new_target))
    base = baseline_of(plan, base_results)
    collection, g = judged(head_plan, head_results, baseline=base, mode=gate.Mode.REGRESSION, why="test")
    change = {c.target.id: c.change for c in g.cells}
    assert change[newly] is gate.Change.NEWLY_FAILING
    assert change[still] is gate.Change.STILL_FAILING
    assert change[fixed] is gate.Change.FIXED
    assert change[other_check] is gate.Change.NEWLY_FAILING  # fails another check than on the base
    assert change[new_target.id] is gate.Change.NEW
    assert change[ids[5]] is gate.Change.UNCHANGED
    assert g.removed == (removed,)
    assert {c.target.id for c in g.blocking} == {newly, other_check, new_target.id}
    still_cell = g.cell(still)
    assert still_cell is not None and still_cell.known and not still_cell.blocks
    assert still_cell.why == "known: it fails the same checks on the base 0123456"
    assert g.cell(other_check).why == "newly failing against 0123456: decision"  # type: ignore[union-attr]
    s = g.summary()
    assert (s.regressions, s.fixed, s.known, s.new, s.removed) == (3, 1, 1, 0, 1)
    v = view.build(collection, g)
    assert v.headline == "3 regressions, 1 fixed, 8 unchanged, 1 removed (1 known failure)"
    assert [f.target for f in v.known] == [still]
    assert v.comparison is not None and v.comparison.removed == (removed,)
    checks = [(r.target, r.check, r.base, r.head) for r in v.comparison.regressions]
    assert (newly, "parity[logits]", "passed", "failed") in checks
    assert (other_check, "decision", "passed", "failed") in checks
    assert (new_target.id, "parity[logits]", "(new cell)", "failed") in checks
    assert not any(t == still for t, *_ in checks)


def test_the_same_failures_block_in_absolute_mode_even_with_a_baseline() -> None:
    plan, results = scenarios.all_passing()
    still = results[1].target.id
    rows = [failed(r) if r.target.id == still else r for r in results]
    _, g = judged(plan, rows, baseline=baseline_of(plan, rows), mode=gate.Mode.ABSOLUTE, why="nightly")
    assert [c.target.id for c in g.blocking] == [still]
    assert g.cell(still).change is gate.Change.STILL_FAILING  # type: ignore[union-attr]


def test_a_target_missing_on_the_base_counts_as_failing_there_and_missing_on_the_head_blocks() -> None:
    plan, results = scenarios.all_passing()
    gone = results[0].target.id
    base = baseline_of(plan, scenarios.without(results, gone))
    _, g = judged(plan, results, baseline=base, mode=gate.Mode.REGRESSION)
    assert g.cell(gone).change is gate.Change.FIXED and g.cell(gone).base is Status.MISSING  # type: ignore[union-attr]
    _, head_missing = judged(plan, scenarios.without(results, gone), baseline=base, mode=gate.Mode.REGRESSION)
    assert [c.target.id for c in head_missing.blocking] == [gone]
