"""The view model: verdicts, counts and formatted figures, before any template."""

from __future__ import annotations

import dataclasses

from ci_onnx.contracts.results import CheckResult
from ci_onnx.contracts.target import Status
from ci_onnx.report import figures, gate, view
from ci_onnx.report.collect import merge
from tests.golden import scenarios


def build(plan, results) -> view.ReportView:  # type: ignore[no-untyped-def]
    c = merge({r.target.id: r for r in results}, plan)
    return view.build(c, gate.decide(c, plan))


def test_tinycnn_headline_counts_and_blocks() -> None:
    v = build(*scenarios.tinycnn())
    assert v.blocks
    assert v.headline == "2 of 12 targets failed (decision, fallback, parity)"
    assert (v.counts.passed, v.counts.failed, v.counts.expected, v.counts.judged) == (10, 2, 2, 12)
    assert [f.target for f in v.failures] == [scenarios.PARITY_FAIL, scenarios.FALLBACK_FAIL]


def test_parity_row_of_the_failure_carries_its_figures() -> None:
    v = build(*scenarios.tinycnn())
    row = next(r for r in v.parity if r.target == scenarios.PARITY_FAIL)
    assert (row.max_abs, row.max_rel, row.decisions) == ("0.0307", "0.24", "2 / 48")
    assert row.failed and row.verdict == "❌ out of tolerance, decisions changed"
    assert sum(r.failed for r in v.parity) == 1


def test_fallback_table_lists_accelerator_targets_only() -> None:
    v = build(*scenarios.tinycnn())
    assert {r.provider for r in v.fallback} == {"openvino"} and len(v.fallback) == 4
    bad = next(r for r in v.fallback if r.target == scenarios.FALLBACK_FAIL)
    assert (bad.on_provider, bad.on_cpu, bad.cpu_share, bad.ops) == (9, 2, "41.2 %", "ReduceMean, Softmax")
    assert bad.failed and bad.verdict == "❌ over budget"


def test_latency_has_a_column_per_served_batch_size() -> None:
    v = build(*scenarios.tinycnn())
    assert v.latency.batch_sizes == (1, 8, 32)
    assert len(v.latency.rows) == 12 and all(len(r.cells) == 3 for r in v.latency.rows)
    assert all(" / " in c for r in v.latency.rows for c in r.cells)


def test_failures_carry_failing_checks_and_the_reproduce_command() -> None:
    v = build(*scenarios.tinycnn())
    f = v.failures[0]
    assert [c.name for c in f.checks] == ["parity[logits]", "decision"]
    assert "out of tolerance 37" in f.checks[0].figures
    # the plan names the config, so the command needs nothing from CI: it exports and verifies that cell
    assert (
        f.reproduce
        == f"onnx-gate run --config examples/tinycnn/onnx-gate.yml --only '{scenarios.PARITY_FAIL}'"
    )


def test_a_missing_target_gets_a_reproduce_command_too() -> None:
    plan, results = scenarios.all_passing()
    v = build(plan, scenarios.without(results, "ort1.20.1-cpu-op17-dynamo"))
    f = v.failures[0]
    assert f.outcome == "missing" and f.reproduce.startswith("onnx-gate run --config ")
    assert v.headline == "1 of 12 targets failed (missing)"


def test_expected_skips_are_listed_and_do_not_block() -> None:
    v = build(*scenarios.all_passing())
    assert not v.blocks
    assert v.headline == "all 12 targets passed"
    assert len(v.skips) == 2 and all("opset 23 needs" in s.reason for s in v.skips)


def test_an_errored_target_blocks() -> None:
    plan, results = scenarios.all_passing()
    results[3] = scenarios.errored(results[3], "hung for 600 s")
    v = build(plan, results)
    assert v.blocks and v.counts.error == 1 and v.failures[0].icon == "💥"


def test_nothing_reported_blocks() -> None:
    plan, _ = scenarios.all_passing()
    assert build(dataclasses.replace(plan, targets=()), []).blocks


def test_a_non_blocking_check_status_is_not_a_failure() -> None:
    plan, results = scenarios.all_passing()
    r = results[0]
    results[0] = dataclasses.replace(
        r, checks=(*r.checks, CheckResult("memory", Status.SKIPPED, "no RSS here"))
    )
    assert not build(plan, results).blocks


def test_number_formatting() -> None:
    assert figures.fmt_num(float("nan")) == "—"
    assert figures.fmt_num(0.0) == "0"
    assert figures.fmt_num(3.07e-6) == "3.07e-06"
    assert figures.fmt_num(0.0307) == "0.0307"
    assert figures.fmt_share(0.41211) == "41.2 %"
    assert (figures.fmt_ms(4.96), figures.fmt_ms(0.353), figures.fmt_ms(1234.5)) == ("4.96", "0.35", "1234")


def test_an_export_finding_names_its_check_in_the_headline() -> None:
    plan, results = scenarios.all_passing()
    r = results[5]
    finding = CheckResult("train-mode", Status.FAILED, "Dropout with training_mode=True at /drop/Dropout")
    results[5] = dataclasses.replace(
        r, status=Status.FAILED, summary="train-mode", checks=(finding, *r.checks)
    )
    v = build(plan, results)
    assert v.headline == "1 of 12 targets failed (train-mode)"
    assert [c.name for c in v.failures[0].checks] == ["train-mode"]


def test_without_a_plan_the_reproduce_command_is_the_one_the_result_recorded() -> None:
    plan, results = scenarios.tinycnn()
    collection = merge({r.target.id: r for r in results}, plan)
    bare = dataclasses.replace(collection, config_path="")
    f = next(f for f in view.build(bare, gate.decide(bare)).failures if f.target == scenarios.PARITY_FAIL)
    assert f.reproduce.startswith("onnx-gate verify --bundle ")
