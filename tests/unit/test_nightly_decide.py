"""A night's decisions without a server: which issue to open, comment on or close, and what it says."""

from __future__ import annotations

import dataclasses

from ci_onnx.contracts.target import Status, Target
from ci_onnx.nightly.families import group
from ci_onnx.nightly.night import Decided, Kind, OpenIssue, decide
from ci_onnx.nightly.state import Memory, TrackState, embed, extract
from ci_onnx.nightly.text import Night
from ci_onnx.plan import Plan
from ci_onnx.report import gate
from ci_onnx.report.collect import merge
from tests.support.nights import result, target

FAMILY = "cpu-op17-dynamo@latest"
ALL = ["1.31.1", "1.31.2", "1.31.3", "1.32.0", "1.32.1"]


def between(good: str, bad: str, _package: str) -> list[str]:
    return ALL[ALL.index(good) + 1 : ALL.index(bad) + 1]


def run(
    cells: list[tuple[Target, bool]],
    issues: dict[str, OpenIssue] | None = None,
    memory: dict[str, str] | None = None,
    verify: dict[str, Status] | None = None,
) -> Decided:
    plan = Plan(1, "onnx-gate.yml", "digitnet", tuple(t for t, _ in cells))
    by_id = {t.id: result(t, fails=fails) for t, fails in cells if not t.expected_skip}
    asked = verify if verify is not None else None

    def verifier(version: str) -> Status:
        assert asked is not None
        return asked[version]

    return decide(
        group(collection := merge(by_id, plan), gate.decide(collection, plan)),
        issues or {},
        Memory(1, memory or {}),
        Night("2026-11-29"),
        releases=between,
        verifier_for=lambda _f: verifier if asked is not None else None,
    )


def test_latest_2_finds_its_last_good_release_in_the_same_night() -> None:
    decided = run([(target("1.32.0", "latest-2"), True), (target("1.31.3", "latest-2"), False)])
    (action,) = decided.actions
    state = extract(action.body)
    assert action.kind is Kind.OPEN and state is not None
    assert (state.first_bad, state.last_good, state.untried) == ("1.32.0", "1.31.3", ())
    assert decided.memory.last_good == {"cpu-op17-dynamo@latest-2": "1.31.3"}


def test_a_release_the_search_could_not_judge_is_named_with_a_warning() -> None:
    verify = {"1.31.2": Status.PASSED, "1.31.3": Status.ERROR}
    decided = run([(target("1.32.0"), True)], memory={FAMILY: "1.31.1"}, verify=verify)
    (action,) = decided.actions
    assert "**First failing release: onnxruntime 1.31.3**" in action.body
    assert "could not judge 1.31.3 (its verdict: error), so the break may be later" in action.body


def test_an_unfinished_search_is_resumed_when_a_verifier_is_at_hand() -> None:
    before = TrackState(1, FAMILY, "1.32.0", "1.31.1", ("1.31.2", "1.31.3"), "1.32.0", "2026-11-28", 1)
    issue = OpenIssue(4, "https://github.com/acme/digits/issues/4", f"<!-- m -->\n{embed(before)}")
    verify = {"1.31.2": Status.PASSED, "1.31.3": Status.PASSED}
    (action,) = run([(target("1.32.0"), True)], issues={FAMILY: issue}, verify=verify).actions
    state = extract(action.body)
    assert action.kind is Kind.COMMENT and action.issue == issue and state is not None
    assert (state.first_bad, state.last_good, state.untried) == ("1.32.0", "1.31.3", ())
    assert (state.since, state.nights) == ("2026-11-28", 2)
    assert "First failing release: **1.32.0**" in action.comment


def test_a_known_first_bad_is_kept_and_a_newer_failing_release_is_reported() -> None:
    before = TrackState(1, FAMILY, "1.31.3", "1.31.2", (), "1.32.0", "2026-11-27", 2)
    issue = OpenIssue(4, "u", embed(before))
    (action,) = run([(target("1.32.1"), True)], issues={FAMILY: issue}, verify={}).actions
    state = extract(action.body)
    assert state == dataclasses.replace(before, failing="1.32.1", nights=3)
    assert action.title.endswith("fails on onnxruntime 1.32.1")


def test_expected_skips_neither_open_nor_close() -> None:
    skip = dataclasses.replace(target("1.32.0"), expected_skip="fp16 verification is not built")
    issue = OpenIssue(4, "u", "<!-- onnx-gate:nightly:cpu-op17-dynamo@latest -->")
    assert run([(skip, True)], issues={FAMILY: issue}).actions == ()


def test_green_closes_only_the_familys_own_issue() -> None:
    issue = OpenIssue(4, "u", "x")
    other = OpenIssue(5, "u", "y")
    decided = run([(target("1.32.1"), False)], issues={FAMILY: issue, "cpu-op18-dynamo@latest": other})
    assert [(a.kind, a.issue) for a in decided.actions] == [(Kind.CLOSE, issue)]
    assert decided.broken == ()
