"""The expected-failure ledger (`expected_failures`) and `gate.mode`: config, decision, report."""

from __future__ import annotations

import dataclasses
import datetime
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from ci_onnx import config
from ci_onnx import plan as planning
from ci_onnx.cli import cli
from ci_onnx.contracts.errors import ConfigError
from ci_onnx.contracts.gate_settings import ExpectedFailure, GateSettings, Mode
from ci_onnx.contracts.results import write_result
from ci_onnx.report import gate, render, view
from ci_onnx.report.collect import merge
from tests.golden import scenarios
from tests.unit.test_config import GOOD

TODAY = datetime.date(2026, 12, 1)
FALLBACK = ExpectedFailure(
    "ort1.24.1-openvino-*",
    "fallback",
    "OpenVINO leaves ReduceMean to the CPU",
    "2026-12-31",
    "https://x/1",
    0,
)
PARITY = ExpectedFailure(
    "ort1.20.1-cpu-*", "parity[*]", "1.20 rounds Softmax differently", "2026-12-31", "", 1
)
DECISION = ExpectedFailure("ort1.20.1-cpu-*", "decision", "follows from the parity", "2026-12-31", "", 2)


def decided(ledger: tuple[ExpectedFailure, ...], **kwargs: object) -> tuple[view.ReportView, gate.Gate]:
    plan, results = scenarios.tinycnn()
    collection = merge({r.target.id: r for r in results}, plan)
    kwargs.setdefault("today", TODAY)
    g = gate.decide(collection, plan, ledger_entries=ledger, **kwargs)  # type: ignore[arg-type]
    return view.build(collection, g), g


def test_a_failure_every_check_of_which_is_expected_is_shown_with_its_reason_and_does_not_block() -> None:
    v, g = decided((FALLBACK, PARITY, DECISION))
    assert not g.blocks and g.blocking == ()
    assert g.summary().expected == 2
    assert [f.target for f in v.known] == [scenarios.PARITY_FAIL, scenarios.FALLBACK_FAIL]
    fallback = next(f for f in v.known if f.target == scenarios.FALLBACK_FAIL)
    assert (
        fallback.standing == "expected: OpenVINO leaves ReduceMean to the CPU (until 2026-12-31, https://x/1)"
    )
    assert v.headline == "10 of 12 targets passed; 2 expected failures"
    text = render.render(v)
    assert "2 known or expected failure(s), not blocking</summary>" in text
    assert "### Failures" not in text


def test_a_failing_check_no_entry_covers_still_blocks() -> None:
    _, g = decided((FALLBACK, PARITY))  # the parity target's decision check is not covered
    assert [c.target.id for c in g.blocking] == [scenarios.PARITY_FAIL]


def test_an_expired_entry_blocks_and_says_it_expired() -> None:
    old = dataclasses.replace(FALLBACK, until="2026-11-30")
    v, g = decided((old, PARITY, DECISION))
    (cell,) = g.blocking
    assert cell.target.id == scenarios.FALLBACK_FAIL and cell.expired == (old,)
    assert cell.why == (
        "expected_failures[0] (OpenVINO leaves ReduceMean to the CPU) expired on 2026-11-30: "
        "fix the failure, or renew `until` in onnx-gate.yml"
    )
    assert v.ledger == (f"⏰ {scenarios.FALLBACK_FAIL}: {cell.why}",)
    # the last day named still holds
    _, on_the_day = decided((old, PARITY, DECISION), today=datetime.date(2026, 11, 30))
    assert not on_the_day.blocks


def test_an_entry_that_matches_no_failure_is_stale_and_named_remove_it() -> None:
    gone = ExpectedFailure("ort1.32.0-*", "fallback", "fixed long ago", "2027-01-01", "", 3)
    v, g = decided((FALLBACK, PARITY, DECISION, gone))
    assert not g.blocks
    assert g.stale == (
        "expected_failures[3] (select 'ort1.32.0-*', check 'fallback') matches no failure of this run: remove it",
    )
    assert g.stale[0] in render.render(v)


def test_the_ledger_holds_in_regression_mode_too_and_a_missing_target_always_blocks() -> None:
    plan, results = scenarios.all_passing()
    gone = "ort1.20.1-cpu-op17-dynamo"
    collection = merge({r.target.id: r for r in scenarios.without(results, gone)}, plan)
    no_entry = gate.decide(collection, plan, today=TODAY)
    assert [c.target.id for c in no_entry.blocking] == [gone]
    missing = ExpectedFailure(gone, "missing", "the runner is being replaced", "2026-12-31", "", 0)
    assert not gate.decide(collection, plan, ledger_entries=(missing,), today=TODAY).blocks


def test_the_plan_carries_the_ledger_and_the_mode_to_the_report(tmp_path: Path) -> None:
    plan, results = scenarios.tinycnn()
    settings = GateSettings(expected_failures=(FALLBACK, PARITY, DECISION))
    plan = dataclasses.replace(plan, gate=settings)
    for r in results:
        write_result(tmp_path / "results", r)
    (tmp_path / "plan.json").write_text(planning.to_json(plan))
    assert planning.read_plan(tmp_path / "plan.json").gate == settings
    args = ["report", "--results", str(tmp_path / "results"), "--plan", str(tmp_path / "plan.json")]
    run = CliRunner().invoke(cli, [*args, "--out", str(tmp_path / "out"), "--no-publish"])
    assert run.exit_code == 0, run.output
    assert "onnx-gate: absolute mode (every failure blocks; not a pull request)" in run.output
    assert (
        "_Judged in absolute mode (every failure blocks; not a pull request)._"
        in (tmp_path / "out" / "report.md").read_text()
    )


@pytest.mark.parametrize(
    ("configured", "baseline", "pull_request", "expected"),
    [
        ("", True, True, (Mode.REGRESSION, "a pull request with a baseline")),
        ("", True, False, (Mode.REGRESSION, "a comparison with a baseline")),
        ("", False, True, (Mode.ABSOLUTE, "no baseline")),
        ("", False, False, (Mode.ABSOLUTE, "not a pull request")),
        ("absolute", True, True, (Mode.ABSOLUTE, "gate.mode in onnx-gate.yml")),
        ("regression", False, True, (Mode.REGRESSION, "gate.mode in onnx-gate.yml")),
    ],
)
def test_the_mode_is_chosen_by_the_config_else_by_the_event(
    configured: str, baseline: bool, pull_request: bool, expected: tuple[Mode, str]
) -> None:
    assert gate.choose(configured, baseline=baseline, pull_request=pull_request) == expected


def test_regression_mode_without_a_baseline_judges_absolutely_and_says_so() -> None:
    _, g = decided((), mode=Mode.REGRESSION, why="gate.mode in onnx-gate.yml")
    assert g.mode is Mode.ABSOLUTE and g.blocks
    assert g.mode_why == "no baseline to compare with, so every failure blocks"


LEDGER = """\
expected_failures:
  - select: "ort1.2*-openvino-*"
    check: fallback
    reason: OpenVINO leaves ReduceMean to the CPU
    until: 2026-12-31
    link: https://github.com/acme/digits/issues/12
gate: {mode: regression, parity_drift: 0.5, serving: {p50: {threshold: 0.2}}}
"""


def test_the_ledger_and_the_gate_keys_load_from_onnx_gate_yml() -> None:
    cfg = config.parse(GOOD + LEDGER, Path("x.yml"))
    (entry,) = cfg.gate.expected_failures
    assert entry == ExpectedFailure(
        "ort1.2*-openvino-*",
        "fallback",
        "OpenVINO leaves ReduceMean to the CPU",
        "2026-12-31",  # an unquoted YAML date reads as the same day
        "https://github.com/acme/digits/issues/12",
        0,
    )
    assert cfg.gate.mode == "regression" and cfg.gate.parity_drift == 0.5
    p50 = cfg.gate.serving["p50"]
    assert (p50.threshold, p50.p, p50.stored_threshold) == (0.2, 0.01, 0.25)
    assert config.parse(GOOD, Path("x.yml")).gate == GateSettings()


BAD_LEDGER = [
    ("    reason: OpenVINO leaves ReduceMean to the CPU\n", "", r"x\.yml:10: expected_failures\.0: 'reason' is a required property"),
    ("until: 2026-12-31", "until: 2026-13-01", r"x\.yml:13: expected_failures\.0\.until: '2026-13-01' is not a calendar day; write YYYY-MM-DD"),
    ("until: 2026-12-31", "until: next week", r"x\.yml:13: expected_failures\.0\.until: 'next week' is not a date; write YYYY-MM-DD"),
    ("    link:", "    lnk:", r"x\.yml:14: expected_failures\.0\.lnk: unknown key; did you mean 'link'\?"),
    ("mode: regression", "mode: regresion", r"x\.yml:15: gate\.mode: 'regresion' is not one of: regression, absolute; did you mean 'regression'\?"),
    ("parity_drift: 0.5", "parity_drift: -1", r"x\.yml:15: gate\.parity_drift: -1 is less than or equal to the minimum of 0"),
    ("{threshold: 0.2}", "{treshold: 0.2}", r"x\.yml:15: gate\.serving\.p50\.treshold: unknown key; did you mean 'threshold'\?"),
]  # fmt: skip


@pytest.mark.parametrize(("old", "new", "message"), BAD_LEDGER)
def test_an_invalid_entry_or_gate_key_is_one_line_naming_the_key(old: str, new: str, message: str) -> None:
    text = GOOD + LEDGER
    assert old in text
    with pytest.raises(ConfigError) as err:
        config.parse(text.replace(old, new, 1), Path("x.yml"))
    assert re.fullmatch(message + ".*", err.value.message) and "\n" not in err.value.message, (
        err.value.message
    )


def test_an_expected_failure_breaks_no_nightly_family() -> None:
    from ci_onnx.nightly.families import group

    plan, results = scenarios.tinycnn()
    collection = merge({r.target.id: r for r in results}, plan)
    judged = gate.decide(collection, plan, ledger_entries=(FALLBACK,), today=TODAY)
    broken = {f.key.id for f in group(collection, judged) if f.broken}
    assert broken == {"cpu-op18-torchscript@1.20.1"}, json.dumps(sorted(broken))
