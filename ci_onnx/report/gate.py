"""The gate decision: the one place that says what blocks the merge.

``decide(results, plan, baseline, ledger, mode)`` takes every target's outcome and returns a frozen
:class:`Gate`; ``report``, ``run`` and the nightly call it, and the views, templates, check run and
exit codes only show its answer.

Per target, in this order:

* a failure covered by an ``expected_failures`` entry in date is *expected*: shown with its reason,
  never blocking; an expired entry covers nothing and says so;
* a target with no result (*missing*) blocks: nobody knows what it would have said;
* ``absolute`` mode: every other failure blocks;
* ``regression`` mode (a baseline is needed; without one the gate judges absolutely and says so):
  a failure blocks when it is new against the base (the target passed there, a check that passed
  there fails, or the cell is new), and is *known* when the base failed the same checks (an error:
  of the same kind, :func:`error_kind`); a known failure that got worse (:func:`worse`) blocks as
  "known, worse"; a serving figure that regressed past its noise rule blocks too
  (ci_onnx/report/diff.py).

Missing and errored targets are covered by a ledger entry only where it names the target and the
check exactly (ci_onnx/report/ledger.py).

Unreadable result files, failing JUnit files and a run in which no target reported block in either
mode.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
from collections.abc import Sequence

from ci_onnx.contracts.gate_settings import ExpectedFailure, GateSettings, Mode
from ci_onnx.contracts.results import TargetResult
from ci_onnx.contracts.target import Status, Target
from ci_onnx.plan import Plan
from ci_onnx.report import diff, ledger, policy
from ci_onnx.report.baseline import Baseline
from ci_onnx.report.collect import Collection, Entry

ABSOLUTE_WHY = "absolute mode: every failure blocks"


class Change(enum.StrEnum):
    """A target's transition from the base commit to the head."""

    NEWLY_FAILING = "newly failing"
    STILL_FAILING = "still failing"
    FIXED = "fixed"
    NEW = "new"
    REMOVED = "removed"
    UNCHANGED = "unchanged"


@dataclasses.dataclass(frozen=True)
class Cell:
    """The gate's word on one target."""

    target: Target
    outcome: Status
    failing: tuple[str, ...]
    """The head's failing checks (``missing`` or ``error`` where no check says which)."""
    blocks: bool
    why: str
    """One line: why it blocks, or why a failure does not."""
    change: Change | None = None
    """Against the base; None without a baseline."""
    base: Status | None = None
    """The base's outcome (MISSING where the base plan held it and no result came); None: no base
    result, or no baseline."""
    expected: tuple[ExpectedFailure, ...] = ()
    """The ledger entries that cover its failures (in date: it is an expected failure)."""
    expired: tuple[ExpectedFailure, ...] = ()
    result: TargetResult | None = dataclasses.field(default=None, repr=False, compare=False)
    """The head's result, for the views' figures."""

    @property
    def is_failure(self) -> bool:
        return self.outcome.failing

    @property
    def known(self) -> bool:
        """A failure the base had too, in regression mode: shown, not blocking."""
        return self.is_failure and not self.blocks and self.change is Change.STILL_FAILING

    @property
    def is_expected(self) -> bool:
        return self.is_failure and bool(self.expected) and not self.expired and not self.blocks


@dataclasses.dataclass(frozen=True)
class Summary:
    """What the pull request changed, counted per target."""

    regressions: int
    fixed: int
    unchanged: int
    known: int
    """Failures the base had too (regression mode)."""
    expected: int
    new: int
    removed: int


@dataclasses.dataclass(frozen=True)
class Gate:
    mode: Mode
    mode_why: str
    """How the mode was chosen ("a pull request with a baseline", "gate.mode in onnx-gate.yml")."""
    blocks: bool
    cells: tuple[Cell, ...]
    baseline: Baseline | None = None
    removed: tuple[str, ...] = ()
    """Targets the base had that the head's plan does not."""
    findings: tuple[diff.Finding, ...] = ()
    """Figures that changed against the base: serving regressions, parity drift, placement moves."""
    problems: tuple[str, ...] = ()
    """Result files that could not be read (each blocks)."""
    junit_failed: int = 0
    stale: tuple[str, ...] = ()
    """Ledger entries that matched no failure: "remove it"."""
    reasons: tuple[str, ...] = ()
    """Why it blocks, one line each (empty when it passes)."""
    settings: GateSettings = dataclasses.field(default_factory=GateSettings)
    """The thresholds it judged by (the report says which test was used)."""
    policy_source: str = ""
    """Whose policy judged it (ci_onnx/report/policy.py), where that is worth saying."""
    policy_changes: tuple[str, ...] = ()
    """What the head's policy changes against the base's, one line each, and whether it applies."""

    @property
    def blocking(self) -> tuple[Cell, ...]:
        return tuple(c for c in self.cells if c.blocks)

    @property
    def judged(self) -> int:
        return sum(1 for c in self.cells if c.outcome is not Status.EXPECTED)

    def cell(self, target_id: str) -> Cell | None:
        return next((c for c in self.cells if c.target.id == target_id), None)

    def base(self, target_id: str) -> TargetResult | None:
        """The baseline's result for this target, if there is a baseline and it holds one."""
        return self.baseline.results.get(target_id) if self.baseline is not None else None

    def summary(self) -> Summary:
        judged = [c for c in self.cells if c.outcome is not Status.EXPECTED or c.change is Change.NEW]
        regressed = {c.target.id for c in self.cells if c.blocks} | {
            f.target for f in self.findings if f.blocks
        }
        return Summary(
            regressions=len(regressed),
            fixed=sum(1 for c in self.cells if c.change is Change.FIXED),
            unchanged=sum(
                1
                for c in judged
                if c.target.id not in regressed and c.change not in (Change.FIXED, Change.NEW)
            ),
            known=sum(1 for c in self.cells if c.known),
            expected=sum(1 for c in self.cells if c.is_expected),
            new=sum(1 for c in self.cells if c.change is Change.NEW and c.target.id not in regressed),
            removed=len(self.removed),
        )


def choose(configured: str, *, baseline: bool, pull_request: bool) -> tuple[Mode, str]:
    """The mode, and why: ``gate.mode`` when set, else regression for a pull request (or a local
    comparison) with a baseline, else absolute (the default branch, the nightly, no baseline)."""
    if configured:
        return Mode(configured), "gate.mode in onnx-gate.yml"
    if baseline and pull_request:
        return Mode.REGRESSION, "a pull request with a baseline"
    if baseline:
        return Mode.REGRESSION, "a comparison with a baseline"
    return Mode.ABSOLUTE, "no baseline" if pull_request else "not a pull request"


def _failing(entry: Entry) -> tuple[str, ...]:
    r = entry.result
    names = tuple(c.name for c in r.checks if c.status.failing) if r is not None else ()
    return names or ((entry.outcome.value,) if entry.outcome.failing else ())


def _base_failing(base: Baseline, target_id: str) -> tuple[Status | None, frozenset[str]]:
    """The base's outcome for ``target_id`` and its failing checks (None: the base had no such cell)."""
    result = base.results.get(target_id)
    if result is None:
        if target_id in base.skipped:
            return Status.EXPECTED, frozenset()
        return (Status.MISSING, frozenset({"missing"})) if target_id in base.planned else (None, frozenset())
    names = frozenset(c.name for c in result.checks if c.status.failing)
    return result.status, names or (
        frozenset({result.status.value}) if result.status.failing else frozenset()
    )


def error_kind(result: TargetResult | None) -> str:
    """What stopped an errored target: ``timeout``, ``crash`` (a signal), ``environment`` (its
    runtime could not be made or held another release), ``bundle``, or the erroring check's name;
    "" where the result is not an error. A known error is one of the same kind on the base."""
    if result is None or result.status is not Status.ERROR:
        return ""
    check = next((c for c in result.checks if c.status is Status.ERROR), None)
    if check is None:
        return "error"
    if check.name == "runner":
        if "timed out" in check.message:
            return "timeout"
        return "crash" if "killed by" in check.message else "runner"
    return "environment" if check.name in ("environment", "runtime") else check.name


def worse(head: TargetResult | None, base: TargetResult | None, drift: float) -> str:
    """How a failure the base had too got worse on the head ("" where it did not): a failing output
    whose worst share of its tolerance grew by more than ``drift`` of itself (0.25: a quarter), or
    more top-k decisions changed. Identical bytes give identical figures, so this is not noise."""
    if head is None or base is None:
        return ""
    base_parity = {p.output: p for p in base.parity}
    for p in head.parity:
        b = base_parity.get(p.output)
        if b is None or p.passed or b.passed:
            continue
        if p.worst_share is not None and b.worst_share is not None:
            if p.worst_share > b.worst_share * (1 + drift):
                return (
                    f"parity[{p.output}] uses {p.worst_share:.3g}× its tolerance, "
                    f"{b.worst_share:.3g}× on the base"
                )
        elif p.max_abs > b.max_abs * (1 + drift):
            return f"parity[{p.output}] max abs {p.max_abs:.3g}, {b.max_abs:.3g} on the base"
    if head.decisions and base.decisions and head.decisions.changed > base.decisions.changed:
        return (
            f"{head.decisions.changed} of {head.decisions.total} decisions changed, "
            f"{base.decisions.changed} on the base"
        )
    return ""


def _change(entry: Entry, failing: tuple[str, ...], base: Baseline) -> tuple[Change, Status | None]:
    tid = entry.target.id
    base_status, base_failing = _base_failing(base, tid)
    if base_status is None:
        return Change.NEW, None
    if failing:
        same_error = entry.outcome is not Status.ERROR or (
            base_status is Status.ERROR and error_kind(entry.result) == error_kind(base.results.get(tid))
        )
        if base_status.failing and set(failing) <= base_failing and same_error:
            return Change.STILL_FAILING, base_status
        return Change.NEWLY_FAILING, base_status
    if base_status.failing:
        return (Change.FIXED if entry.outcome is Status.PASSED else Change.UNCHANGED), base_status
    return Change.UNCHANGED, base_status


def _judge(
    entry: Entry,
    mode: Mode,
    baseline: Baseline | None,
    expected: Sequence[ExpectedFailure],
    today: datetime.date,
    drift: float,
) -> Cell:
    failing = _failing(entry)
    change, base = _change(entry, failing, baseline) if baseline is not None else (None, None)
    cell = Cell(entry.target, entry.outcome, failing, False, "", change, base, result=entry.result)
    if not failing:
        return cell
    exact = entry.outcome in (Status.MISSING, Status.ERROR)  # never covered by a glob
    covered = ledger.cover(expected, entry.target.id, failing, today, exact=exact)
    cell = dataclasses.replace(cell, expected=covered.entries, expired=covered.expired)
    if covered.expired:
        return dataclasses.replace(cell, blocks=True, why=ledger.expiry(covered.expired[0]))
    if covered.expected:
        return dataclasses.replace(cell, why=ledger.describe(covered.entries[0]))
    if entry.outcome is Status.MISSING:
        return dataclasses.replace(cell, blocks=True, why="no result arrived: missing blocks in every mode")
    if mode is Mode.ABSOLUTE:
        return dataclasses.replace(cell, blocks=True, why=ABSOLUTE_WHY)
    assert baseline is not None  # regression mode without a baseline becomes absolute in decide()
    if change is Change.STILL_FAILING:
        grown = worse(entry.result, baseline.results.get(entry.target.id), drift)
        if grown:
            return dataclasses.replace(
                cell, blocks=True, why=f"known on the base {baseline.short}, worse: {grown}"
            )
        return dataclasses.replace(cell, why=f"known: it fails the same checks on the base {baseline.short}")
    if change is Change.NEW:
        return dataclasses.replace(cell, blocks=True, why="a new cell that fails")
    base_kind = error_kind(baseline.results.get(entry.target.id))
    if entry.outcome is Status.ERROR and base_kind and base_kind != error_kind(entry.result):
        return dataclasses.replace(
            cell,
            blocks=True,
            why=f"an error of another kind than on {baseline.short}: {error_kind(entry.result)}, "
            f"{base_kind} there",
        )
    added = [c for c in failing if c not in _base_failing(baseline, entry.target.id)[1]]
    return dataclasses.replace(
        cell,
        blocks=True,
        why=f"newly failing against {baseline.short}: {', '.join(added or failing)}",
    )


def decide(
    results: Collection,
    plan: Plan | None = None,
    baseline: Baseline | None = None,
    ledger_entries: Sequence[ExpectedFailure] | None = None,
    mode: Mode = Mode.ABSOLUTE,
    *,
    why: str = "",
    junit_failed: int = 0,
    today: datetime.date | None = None,
    settings: GateSettings | None = None,
    judged_by: policy.Policy | None = None,
) -> Gate:
    """The gate's answer for these results. ``judged_by``: the policy that judges them (the base's,
    :func:`ci_onnx.report.policy.between`): its settings, its tolerances (a head's loosened one
    re-judged) and its targets (a family the head dropped blocks). Without it, ``ledger_entries``
    and ``settings`` default to the plan's (``Plan.gate``); ``today`` decides which ledger entries
    have expired (default: today, UTC)."""
    changes: tuple[policy.Change, ...] = ()
    if judged_by is not None:
        settings = judged_by.settings
        changes = judged_by.changes
        if baseline is not None and not judged_by.approved_by:
            results, tolerances = policy.rejudge(results, baseline.results, baseline.plan, plan)
            changes += tolerances
    settings = settings or (plan.gate if plan is not None else GateSettings())
    expected = tuple(settings.expected_failures if ledger_entries is None else ledger_entries)
    today = today or datetime.datetime.now(datetime.UTC).date()
    if mode is Mode.REGRESSION and baseline is None:
        mode, why = Mode.ABSOLUTE, "no baseline to compare with, so every failure blocks"
    cells = tuple(_judge(e, mode, baseline, expected, today, settings.parity_drift) for e in results.entries)
    findings: tuple[diff.Finding, ...] = ()
    removed: tuple[str, ...] = ()
    if baseline is not None:
        head_ids = {c.target.id for c in cells}
        removed = tuple(sorted((set(baseline.results) | set(baseline.planned)) - head_ids))
        findings = tuple(
            dataclasses.replace(f, blocks=f.regression and mode is Mode.REGRESSION)
            for e in results.entries
            if e.result is not None and (base := baseline.results.get(e.target.id)) is not None
            for f in diff.compare(e.result, base, settings)
        )
    used = [entry for c in cells for entry in c.expected]
    reasons = [f"{c.target.id}: {c.why}" for c in cells if c.blocks]
    if judged_by is not None and baseline is not None:
        dropped = [t for t in removed if _family(baseline, t) in judged_by.removed_families]
        reasons += [
            f"{t}: removed from the matrix by this pull request; the base's policy still plans it "
            "(a removal applies once merged)"
            for t in dropped
        ]
    reasons += [f"{f.target}: {f.what} regressed ({f.figure})" for f in findings if f.blocks]
    reasons += [f"unreadable results: {p}" for p in results.problems]
    if junit_failed:
        reasons.append(f"{junit_failed} other test(s) failed")
    if sum(1 for c in cells if c.outcome is not Status.EXPECTED) == 0 and not results.problems:
        reasons.append("no targets reported")
    return Gate(
        mode=mode,
        mode_why=why,
        blocks=bool(reasons),
        cells=cells,
        baseline=baseline,
        removed=removed,
        findings=findings,
        problems=results.problems,
        junit_failed=junit_failed,
        stale=ledger.stale(expected, used),
        reasons=tuple(reasons),
        settings=settings,
        policy_source=judged_by.source if judged_by is not None else "",
        policy_changes=tuple(c.line for c in changes),
    )


def _family(baseline: Baseline, target_id: str) -> str:
    """The family of a base target, from the base's plan (or its result)."""
    if baseline.plan is not None:
        for t in baseline.plan.targets:
            if t.id == target_id:
                return t.family
    result = baseline.results.get(target_id)
    return result.target.family if result is not None else ""
