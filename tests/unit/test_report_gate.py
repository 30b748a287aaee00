"""The gate decision: the one place that says what blocks, and the views that only show it."""

from __future__ import annotations

import dataclasses
from typing import Any

from ci_onnx.plan import Plan
from ci_onnx.report import gate, render, view
from ci_onnx.report.collect import Collection, merge
from ci_onnx.results import TargetResult
from ci_onnx.target import Status
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
