"""The policy a pull request is judged by: the base's, never the head's own.

What decides a verdict (the gate settings, the expected-failure ledger, the set of targets, the
tolerances and the budgets) comes from the base commit's plan: the baseline artifact's, or under
``--baseline-ref`` the plan of the base commit's own config. The head's differences are *policy
changes*, each shown in the report: a tightening applies at once (the head asked for more), a
loosening only once it is merged. A head that breaks the model and adds a catch-all ledger entry is
judged by the base's ledger, in which that entry does not exist.

Where no base policy exists (no baseline, or a baseline without a plan) on a pull request, the
head's ledger covers nothing, since every entry in it is one the pull request wrote; elsewhere (a
push, the nightly, a local run without a baseline) the config is the policy: it is what was merged.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable

from ci_onnx.contracts.gate_settings import ExpectedFailure, GateSettings, Mode, ServingRule
from ci_onnx.contracts.results import CheckResult, OutputParity, TargetResult
from ci_onnx.contracts.target import Status
from ci_onnx.contracts.verify_options import PerBatch, VerifyOptions
from ci_onnx.plan import Plan
from ci_onnx.report.collect import Collection, Entry


@dataclasses.dataclass(frozen=True)
class Change:
    """One difference between the head's policy and the base's."""

    what: str
    """``expected_failures[2] (select '*', check '*') added``, ``gate.parity_drift 0.25 → 1``."""
    loosens: bool
    """Whether it asks less of the model: such a change applies once merged, not in this pull request."""
    approved_by: str = ""
    """The writer whose approval lets a loosening apply now."""

    @property
    def line(self) -> str:
        if not self.loosens:
            return f"{self.what} (tightens: applies now)"
        if self.approved_by:
            return f"{self.what} (loosens: approved by @{self.approved_by}, applies now)"
        return f"{self.what} (loosens: applies once merged)"


@dataclasses.dataclass(frozen=True)
class Policy:
    settings: GateSettings
    """What judges this run: the base's, with the head's tightenings."""
    source: str
    """Where it came from, said in the report."""
    changes: tuple[Change, ...] = ()
    removed_families: frozenset[str] = frozenset()
    """Target families the base plans and the head does not: the head cannot drop a check it fails."""
    approved_by: str = ""
    """Who approved the head's loosenings (``gate.approval_label``, ci_onnx/github/approval.py): its
    policy then judges it."""

    @property
    def loosens(self) -> bool:
        return any(c.loosens for c in self.changes)


def _entry_key(e: ExpectedFailure) -> tuple[str, str, str]:
    return (e.where.split(".expected_failures")[0], e.select, e.check)


def _describe(e: ExpectedFailure) -> str:
    return f"{e.key} (select {e.select!r}, check {e.check!r}, until {e.until})"


def _ledger(
    base: Iterable[ExpectedFailure], head: Iterable[ExpectedFailure]
) -> tuple[list[ExpectedFailure], list[Change]]:
    """The ledger that judges (the base's entries the head kept, each until the earlier of the two
    dates) and the changes: an entry added or widened loosens, one removed or shortened tightens."""
    heads = {_entry_key(e): e for e in head}
    kept: list[ExpectedFailure] = []
    changes: list[Change] = []
    for e in base:
        h = heads.pop(_entry_key(e), None)
        if h is None:
            changes.append(Change(f"{_describe(e)} removed", loosens=False))
            continue
        if h.until > e.until:
            changes.append(Change(f"{_describe(e)} extended to {h.until}", loosens=True))
        elif h.until < e.until:
            changes.append(Change(f"{_describe(e)} shortened to {h.until}", loosens=False))
        kept.append(dataclasses.replace(e, until=min(e.until, h.until)))
    changes += [
        Change(f"{_describe(h)} added: it covers nothing until merged", loosens=True) for h in heads.values()
    ]
    return kept, changes


def _stricter(
    name: str, base: float, head: float, *, larger_is_looser: bool = True
) -> tuple[float, list[Change]]:
    if head == base:
        return base, []
    looser = head > base if larger_is_looser else head < base
    return (base if looser else head), [Change(f"{name} {base:g} → {head:g}", loosens=looser)]


def _serving(
    base: dict[str, ServingRule], head: dict[str, ServingRule]
) -> tuple[dict[str, ServingRule], list[Change]]:
    rules: dict[str, ServingRule] = {}
    changes: list[Change] = []
    for figure, b in base.items():
        h = head.get(figure, b)
        threshold, c1 = _stricter(f"gate.serving.{figure}.threshold", b.threshold, h.threshold)
        p, c2 = b.p, list[Change]()
        if b.p is not None and h.p is not None:
            p, c2 = _stricter(f"gate.serving.{figure}.p", b.p, h.p, larger_is_looser=False)
        stored, c3 = b.stored_threshold, list[Change]()
        if b.stored_threshold is not None and h.stored_threshold is not None:
            stored, c3 = _stricter(
                f"gate.serving.{figure}.stored_threshold", b.stored_threshold, h.stored_threshold
            )
        rules[figure] = dataclasses.replace(b, threshold=threshold, p=p, stored_threshold=stored)
        changes += c1 + c2 + c3
    return rules, changes


def settings_of(base: GateSettings, head: GateSettings) -> tuple[GateSettings, list[Change]]:
    """The gate settings that judge: the base's, with every head change that asks more."""
    ledger, changes = _ledger(base.expected_failures, head.expected_failures)
    drift, c = _stricter("gate.parity_drift", base.parity_drift, head.parity_drift)
    changes += c
    serving, c = _serving(base.serving, head.serving)
    changes += c
    stored = base.stored_figures
    if head.stored_figures != base.stored_figures:
        looser = head.stored_figures == "warn"
        changes.append(Change(f"gate.stored_figures {base.stored_figures} → {head.stored_figures}", looser))
        stored = base.stored_figures if looser else head.stored_figures
    fork_results = base.fork_results
    if head.fork_results != base.fork_results:
        looser = head.fork_results == "accept"
        changes.append(Change(f"gate.fork_results {base.fork_results} → {head.fork_results}", looser))
        fork_results = base.fork_results if looser else head.fork_results
    mode = base.mode
    if head.mode != base.mode:
        looser = head.mode != Mode.ABSOLUTE.value
        changes.append(
            Change(f"gate.mode {base.mode or '(by the event)'} → {head.mode or '(by the event)'}", looser)
        )
        mode = base.mode if looser else head.mode
    judged = dataclasses.replace(
        base,
        mode=mode,
        expected_failures=tuple(ledger),
        parity_drift=drift,
        serving=serving,
        stored_figures=stored,
        fork_results=fork_results,
    )
    return judged, changes


def _budgets(base: Plan, head: Plan) -> list[Change]:
    """Budget changes per model, named; a loosened one is re-judged by :func:`rejudge_budgets`."""
    changes: list[Change] = []
    heads = {m.id: m.verify for m in head.models} or {"": head.verify}
    bases = {m.id: m.verify for m in base.models} or {"": base.verify}
    for model, bv in bases.items():
        hv = heads.get(model)
        if hv is None:
            continue
        where = f"models.{model}." if model else ""
        pairs: list[tuple[str, float | None, float | None, bool]] = [
            ("budgets.cold_start_ms", bv.budgets.cold_start_ms, hv.budgets.cold_start_ms, True),
            ("budgets.peak_rss_mb", bv.budgets.peak_rss_mb, hv.budgets.peak_rss_mb, True),
            ("budgets.cpu_fallback.max_time_share", bv.max_cpu_time_share, hv.max_cpu_time_share, True),
            ("budgets.accuracy_drop", bv.accuracy_drop, hv.accuracy_drop, True),
        ]
        for key in sorted(set(bv.budgets.p99_ms) | set(hv.budgets.p99_ms)):
            pairs.append(
                (f"budgets.p99_ms[{key}]", bv.budgets.p99_ms.get(key), hv.budgets.p99_ms.get(key), True)
            )
        for key in sorted(set(bv.budgets.min_throughput) | set(hv.budgets.min_throughput)):
            pairs.append(
                (
                    f"budgets.min_throughput[{key}]",
                    bv.budgets.min_throughput.get(key),
                    hv.budgets.min_throughput.get(key),
                    False,
                )
            )
        for name, was, now, larger_is_looser in pairs:
            if was == now:
                continue
            if was is None or now is None:  # a budget set is a tightening, one dropped a loosening
                changes.append(
                    Change(
                        f"{where}{name} {'unset' if was is None else f'{was:g}'} → "
                        f"{'unset' if now is None else f'{now:g}'}",
                        loosens=now is None,
                    )
                )
                continue
            changes += _stricter(f"{where}{name}", was, now, larger_is_looser=larger_is_looser)[1]
    return changes


def between(
    base: Plan | None,
    head: Plan | None,
    *,
    pull_request: bool,
    base_commit: str = "",
    approved_by: str = "",
) -> Policy:
    """The policy that judges ``head``'s results against the base whose plan is ``base``;
    ``approved_by``: the writer who approved its loosenings (its own policy then judges it)."""
    own = head.gate if head is not None else GateSettings()
    if base is None:
        if pull_request:
            return Policy(
                dataclasses.replace(own, expected_failures=(), fork_results=GateSettings().fork_results),
                "no base policy (no baseline plan to read it from): the ledger entries of this pull "
                "request cover nothing until merged",
                tuple(
                    Change(f"{_describe(e)} added: it covers nothing until merged", True)
                    for e in own.expected_failures
                ),
            )
        return Policy(own, "the config (nothing to compare it with)")
    settings, changes = settings_of(base.gate, own)
    removed: frozenset[str] = frozenset()
    if head is not None:
        changes += _budgets(base, head)
        head_families = {t.family for t in head.targets}
        removed = frozenset(t.family for t in base.targets if t.family not in head_families)
        changes += [
            Change(f"target {f} removed: still judged until merged", loosens=True) for f in sorted(removed)
        ]
    short = base_commit[:7] or "the base"
    if approved_by and head is not None:
        said = tuple(dataclasses.replace(c, approved_by=approved_by) for c in changes)
        return Policy(
            head.gate, f"this pull request's, approved by @{approved_by}", said, frozenset(), approved_by
        )
    return Policy(settings, f"the base's ({short})", tuple(changes), removed)


def tolerance_change(head: OutputParity, base: OutputParity) -> tuple[str, bool | None]:
    """Whether ``head``'s output passes under ``base``'s tolerance: (what changed, True: it does,
    False: it does not, None: the figures cannot tell). The worst element's share of the head's
    tolerance bounds its share of the base's: with ``m``, ``M`` the smallest and largest of
    atol_h/atol_b and rtol_h/rtol_b, share_b lies within [share_h·m, share_h·M]."""
    if (head.atol, head.rtol) == (base.atol, base.rtol):
        return "", True
    what = (
        f"parity[{head.output}] tolerance atol {base.atol:g} → {head.atol:g}, "
        f"rtol {base.rtol:g} → {head.rtol:g}"
    )
    if head.atol <= base.atol and head.rtol <= base.rtol:
        return what, head.passed  # tightened: the head was judged more strictly already
    if head.worst_share is None or head.shape_mismatch:
        return what, None
    ratios = [
        h / b if b > 0 else (math.inf if h > 0 else 1.0)
        for h, b in ((head.atol, base.atol), (head.rtol, base.rtol))
    ]
    low, high = min(ratios), max(ratios)
    if head.worst_share * high <= 1:
        return what, True
    if head.worst_share * low > 1:
        return what, False
    return what, None


def _rejudged(head: TargetResult, base: TargetResult) -> tuple[TargetResult, list[Change]]:
    """``head`` judged by ``base``'s tolerance where the head loosened it: a parity check that
    passes only under the looser one fails, saying so (or that the figures cannot tell)."""
    base_parity = {p.output: p for p in base.parity}
    changes: list[Change] = []
    failed: dict[str, str] = {}
    for p in head.parity:
        b = base_parity.get(p.output)
        if b is None:
            continue
        what, passes = tolerance_change(p, b)
        if not what:
            continue
        loosened = p.atol > b.atol or p.rtol > b.rtol
        changes.append(Change(f"{head.target.id}: {what}", loosens=loosened))
        if loosened and p.passed and passes is not True:
            failed[f"parity[{p.output}]"] = (
                f"passes only under the tolerance this pull request loosened ({what}); by the base's "
                + (
                    "it fails"
                    if passes is False
                    else f"its worst element ({p.worst_share:.3g}× the head's) cannot be shown to pass"
                )
            )
    if not failed:
        return head, changes
    checks = tuple(
        dataclasses.replace(c, status=Status.FAILED, message=failed[c.name]) if c.name in failed else c
        for c in head.checks
    )
    first = next(iter(failed))
    summary = f"{first}: {failed[first]}"
    return dataclasses.replace(head, status=Status.FAILED, checks=checks, summary=summary), changes


def over_base_budgets(result: TargetResult, base: VerifyOptions) -> list[str]:
    """What ``result`` measured past the base's budgets (each figure as the result carries it): what
    a budget the head loosened would have failed."""
    b = base.budgets
    obs = result.observed
    said: list[str] = []
    cold = obs.serving.cold_start_ms if obs.serving is not None else None
    if b.cold_start_ms is not None and cold is not None and cold > b.cold_start_ms:
        said.append(f"cold start {cold:.4g} ms over the base's budgets.cold_start_ms ({b.cold_start_ms:g})")
    if b.peak_rss_mb is not None and obs.peak_rss_mb is not None and obs.peak_rss_mb > b.peak_rss_mb:
        said.append(
            f"peak RSS {obs.peak_rss_mb:.4g} MB over the base's budgets.peak_rss_mb ({b.peak_rss_mb:g})"
        )
    for s in obs.latency:
        limit = PerBatch(b.p99_ms).at(str(s.batch_size))
        if limit is not None and s.p99_ms > limit:
            said.append(
                f"batch {s.batch_size}: p99 {s.p99_ms:.4g} ms over the base's budgets.p99_ms ({limit:g})"
            )
    for s in (*obs.latency, *obs.sweep_latency):
        key = s.point or str(s.batch_size)
        least = PerBatch(b.min_throughput).at(key)
        if least is not None and s.throughput < least:
            said.append(
                f"{key}: {s.throughput:.4g} items/s under the base's budgets.min_throughput ({least:g})"
            )
    share = obs.placement.cpu_time_share if obs.placement is not None else None
    if share is not None and result.target.provider != "cpu" and share > base.max_cpu_time_share:
        said.append(
            f"CPU time share {share:.0%} over the base's budgets.cpu_fallback.max_time_share "
            f"({base.max_cpu_time_share:.0%})"
        )
    return said


def _over_budget(result: TargetResult, said: list[str]) -> TargetResult:
    check = CheckResult(
        "budget[base]",
        Status.FAILED,
        "passes only under budgets this pull request loosened: " + "; ".join(said),
    )
    return dataclasses.replace(
        result, status=Status.FAILED, checks=(*result.checks, check), summary=f"{check.name}: {check.message}"
    )


def rejudge(
    collection: Collection,
    base_results: dict[str, TargetResult],
    base_plan: Plan | None = None,
    head_plan: Plan | None = None,
) -> tuple[Collection, tuple[Change, ...]]:
    """The head's results under the base's tolerances and, where the head loosened a budget, the
    base's budgets (ci_onnx/report/gate.py judges what this returns), and the tolerance changes
    found."""
    entries: list[Entry] = []
    changes: list[Change] = []
    for e in collection.entries:
        base = base_results.get(e.target.id)
        if e.result is None or e.unchanged_since:
            entries.append(e)
            continue
        result = e.result
        if base is not None:
            result, found = _rejudged(result, base)
            changes += found
        if base_plan is not None and head_plan is not None:
            was, now = base_plan.options_for(e.target), head_plan.options_for(e.target)
            if (was.budgets, was.max_cpu_time_share) != (now.budgets, now.max_cpu_time_share):
                said = over_base_budgets(result, was)
                if said:
                    result = _over_budget(result, said)
        if result is not e.result:
            e = dataclasses.replace(e, result=result, outcome=result.status, reason=result.summary)
        entries.append(e)
    return dataclasses.replace(collection, entries=tuple(entries)), tuple(changes)
