"""The base's policy judges a pull request: the head's ledger entries, loosened thresholds and
tolerances, and dropped targets are policy changes, shown, and applied only once merged."""

from __future__ import annotations

import dataclasses

from ci_onnx.contracts.gate_settings import ExpectedFailure, GateSettings
from ci_onnx.contracts.results import TargetResult
from ci_onnx.plan import Plan
from ci_onnx.report import gate, policy, render, view
from ci_onnx.report.collect import merge
from tests.golden import scenarios
from tests.support.results import observed
from tests.unit.test_report_gate import baseline_of, failed

CATCH_ALL = ExpectedFailure("*", "*", "known", "2099-12-31", "", 0)


def _with_gate(plan: Plan, **changes: object) -> Plan:
    return dataclasses.replace(plan, gate=dataclasses.replace(plan.gate, **changes))  # type: ignore[arg-type]


def _decide(
    plan: Plan, results: list[TargetResult], base_plan: Plan | None, base_results: list[TargetResult]
) -> gate.Gate:
    base = dataclasses.replace(baseline_of(base_plan or plan, base_results), plan=base_plan)
    judged_by = policy.between(base_plan, plan, pull_request=True, base_commit=base.commit)
    return gate.decide(
        merge({r.target.id: r for r in results}, plan),
        plan,
        base,
        mode=gate.Mode.REGRESSION,
        judged_by=judged_by,
    )


def test_a_catch_all_entry_the_pull_request_adds_covers_nothing_and_is_named() -> None:
    plan, results = scenarios.all_passing()
    broken = results[0].target.id
    head = [failed(r) if r.target.id == broken else r for r in results]
    g = _decide(_with_gate(plan, expected_failures=(CATCH_ALL,)), head, plan, results)
    assert [c.target.id for c in g.blocking] == [broken]
    assert g.policy_changes == (
        "expected_failures[0] (select '*', check '*', until 2099-12-31) added: it covers nothing until "
        "merged (loosens: applies once merged)",
    )
    text = render.render(view.build(merge({r.target.id: r for r in head}, plan), g))
    assert "### Policy changes in this pull request" in text and "select '*', check '*'" in text
    assert "judged by the policy of the base's (0123456)" in text


def test_without_a_base_policy_a_pull_requests_ledger_covers_nothing() -> None:
    plan, _ = scenarios.all_passing()
    head_plan = _with_gate(plan, expected_failures=(CATCH_ALL,))
    judged_by = policy.between(None, head_plan, pull_request=True)
    assert judged_by.settings.expected_failures == () and judged_by.source.startswith("no base policy")
    pushed = policy.between(None, head_plan, pull_request=False)
    assert pushed.settings.expected_failures == (CATCH_ALL,)


def test_tightening_applies_at_once_and_loosening_once_merged() -> None:
    base = GateSettings(parity_drift=0.25, expected_failures=(CATCH_ALL,))
    looser, changes = policy.settings_of(base, dataclasses.replace(base, parity_drift=5.0))
    assert looser.parity_drift == 0.25 and changes[0].loosens
    stricter, changes = policy.settings_of(
        base, dataclasses.replace(base, parity_drift=0.1, expected_failures=())
    )
    assert stricter.parity_drift == 0.1 and stricter.expected_failures == ()
    assert [c.loosens for c in changes] == [False, False]
    later = dataclasses.replace(CATCH_ALL, until="2100-01-01")
    kept, changes = policy.settings_of(base, dataclasses.replace(base, expected_failures=(later,)))
    assert kept.expected_failures[0].until == "2099-12-31" and changes[0].loosens


def test_a_target_family_the_pull_request_drops_still_blocks() -> None:
    plan, results = scenarios.all_passing()
    dropped = results[0].target
    head_plan = dataclasses.replace(
        plan, targets=tuple(t for t in plan.targets if t.family != dropped.family)
    )
    head = [r for r in results if r.target.family != dropped.family]
    g = _decide(head_plan, head, plan, results)
    assert g.blocks and any(r.startswith(f"{dropped.id}: removed from the matrix") for r in g.reasons)
    assert any(f"target {dropped.family} removed" in c for c in g.policy_changes)
    # a release that moved on (latest resolves anew) keeps the family: no policy change
    moved = dataclasses.replace(dropped, runtime="1.99.0")
    head_plan = dataclasses.replace(plan, targets=tuple(moved if t == dropped else t for t in plan.targets))
    head = [dataclasses.replace(r, target=moved) if r.target == dropped else r for r in results]
    assert not _decide(head_plan, head, plan, results).blocks


def _loose(r: TargetResult, atol: float, share: float) -> TargetResult:
    p = dataclasses.replace(r.parity[0], atol=atol, worst_share=share)
    return dataclasses.replace(r, parity=(p, *r.parity[1:]))


def test_a_loosened_tolerance_is_judged_by_the_bases() -> None:
    plan, results = scenarios.all_passing()
    tid = results[0].target.id
    base_tol = results[0].parity[0].atol
    for share, blocks in ((0.5, True), (0.001, False)):
        head = [_loose(r, base_tol * 100, share) if r.target.id == tid else r for r in results]
        g = _decide(plan, head, plan, results)
        assert g.blocks is blocks, (share, g.reasons)
        if blocks:
            (cell,) = g.blocking
            assert "passes only under the tolerance this pull request loosened" in cell.result.summary  # type: ignore[union-attr]
        assert any("tolerance atol" in c and "loosens" in c for c in g.policy_changes)


def test_the_bound_of_a_worst_share_under_another_tolerance() -> None:
    _, results = scenarios.all_passing()
    base = dataclasses.replace(results[0].parity[0], atol=1e-4, rtol=1e-3)
    head = dataclasses.replace(base, atol=1e-2, rtol=1e-3, worst_share=0.5)
    assert policy.tolerance_change(head, base)[1] is None  # between 0.5 and 50: cannot tell
    assert policy.tolerance_change(dataclasses.replace(head, rtol=1e-1), base)[1] is False  # ≥ 50
    assert policy.tolerance_change(dataclasses.replace(head, worst_share=0.005), base)[1] is True  # ≤ 0.5


def _with_budget(plan: Plan, ms: float | None) -> Plan:
    from ci_onnx.contracts.verify_options import Budgets

    options = dataclasses.replace(plan.verify, budgets=Budgets(cold_start_ms=ms))
    return dataclasses.replace(
        plan, verify=options, models=tuple(dataclasses.replace(m, verify=options) for m in plan.models)
    )


def test_a_budget_the_pull_request_loosened_is_judged_by_the_bases() -> None:
    from ci_onnx.contracts.results import ServingFigures

    plan, results = scenarios.all_passing()
    slow = [observed(r, serving=ServingFigures(cold_start_ms=800.0)) for r in results]
    base_plan, loosened = _with_budget(plan, 500.0), _with_budget(plan, 5000.0)
    g = _decide(loosened, slow, base_plan, results)
    assert g.blocks and len(g.blocking) == len(slow)
    summary = g.blocking[0].result.summary  # type: ignore[union-attr]
    assert "cold start 800 ms over the base's budgets.cold_start_ms (500)" in summary, summary
    assert any("budgets.cold_start_ms 500 → 5000" in c and "loosens" in c for c in g.policy_changes)
    fast = [observed(r, serving=ServingFigures(cold_start_ms=300.0)) for r in results]
    assert not _decide(loosened, fast, base_plan, results).blocks  # within the base's budget too
