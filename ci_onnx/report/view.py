"""Building the view model (ci_onnx/report/model.py) from a Collection and the gate's decision.

What blocks is the gate's to say (ci_onnx/report/gate.py); this module formats its answer and every
figure, and templates only lay the view out. Each table is its own module (report/parity.py,
fallback.py, latency.py, serving.py, precisions.py…), its rows' ``delta`` (the "vs base" column)
with it; the comparison's own tables and lines come from ci_onnx/report/versus.py.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence

from ci_onnx.contracts.target import Status
from ci_onnx.report import (
    accuracy,
    charts,
    failures,
    fallback,
    latency,
    models,
    parity,
    precisions,
    profile,
    serving,
    triage,
    versus,
)
from ci_onnx.report.collect import Collection, Entry
from ci_onnx.report.gate import Gate
from ci_onnx.report.junit_reader import JUnitSummary
from ci_onnx.report.model import (
    Commit,
    Counts,
    Overview,
    ReportView,
    Skip,
)


def _bindings(entries: Sequence[Entry]) -> tuple[str, ...]:
    """Per bundle, how its inputs reach forward where not each by its own name (export/signature)."""
    from ci_onnx.export.signature import shown

    found: dict[str, str] = {}
    for e in entries:
        check = e.result.check("export") if e.result else None
        lines = shown(check.figures) if check is not None else []
        if lines:
            found[e.target.bundle_key] = "; ".join(line.replace("warning: ", "⚠️ ") for line in lines)
    return tuple(f"`{k}`: {found[k]}" for k in sorted(found))


def _reused(entries: Sequence[Entry]) -> tuple[str, ...]:
    found: dict[str, str] = {}
    for e in entries:
        check = e.result.check("export") if e.result else None
        if check is not None and check.figures.get("cache") == "reused":
            found[e.target.bundle_key] = (
                f"{e.target.bundle_key} (cache key {check.figures.get('cache_key', '?')})"
            )
    return tuple(found[k] for k in sorted(found))


OVERVIEW_FROM = 12
"""Plans with at least this many targets get the compact matrix at the top."""


def _overview(entries: Sequence[Entry]) -> Overview | None:
    if len(entries) < OVERVIEW_FROM:
        return None
    by_key = {e.target.bundle_key: (e.target.model, e.target.opset, e.target.bundle_key) for e in entries}
    columns = sorted(by_key, key=by_key.__getitem__)
    cells: dict[str, dict[str, str]] = {}
    order: list[str] = []
    for e in entries:
        t = e.target
        row = f"{t.runtime} {t.provider}"
        if row not in cells:
            order.append(row)
            cells[row] = {}
        cells[row][t.bundle_key] = failures.ICON[e.outcome]
    return Overview(tuple(columns), tuple((r, tuple(cells[r].get(c, "·") for c in columns)) for r in order))


def _counts(entries: Sequence[Entry]) -> Counts:
    c = Counter(e.outcome for e in entries)
    return Counts(
        total=len(entries),
        passed=c[Status.PASSED],
        failed=c[Status.FAILED],
        error=c[Status.ERROR],
        missing=c[Status.MISSING],
        expected=c[Status.EXPECTED],
        skipped=c[Status.SKIPPED],
    )


def failing_kinds(gate: Gate) -> list[str]:
    """The kinds of check that block (``parity[logits]`` counts as parity), most frequent first."""
    kinds: Counter[str] = Counter()
    for c in gate.blocking:
        kinds.update({name.split("[")[0] for name in c.failing} or {c.outcome.value})
    return [k for k, _ in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))]


def headline(gate: Gate, kinds: Sequence[str] = ()) -> str:
    """What the gate found, in one line: with a baseline, what the change did to the targets."""
    s = gate.summary()
    if gate.baseline is not None:
        text = versus.changed(s)
    elif gate.judged == 0 and not gate.problems:
        return "no targets reported"
    elif gate.blocking:
        targets = "target" if gate.judged == 1 else "targets"
        text = f"{len(gate.blocking)} of {gate.judged} {targets} failed"
        if kinds:
            text += f" ({', '.join(kinds)})"
    else:
        passed = sum(1 for c in gate.cells if c.outcome is Status.PASSED)
        if passed == gate.judged:
            text = "the 1 target passed" if passed == 1 else f"all {passed} targets passed"
        else:
            text = f"{passed} of {gate.judged} {'target' if gate.judged == 1 else 'targets'} passed"
        failures = sum(1 for c in gate.cells if c.is_failure)
        if passed != gate.judged and not failures:
            text += ", none failed"
    if gate.baseline is None and s.expected:
        text += f"; {s.expected} expected failure{'s' if s.expected != 1 else ''}"
    if gate.problems:
        text += f"; {len(gate.problems)} problem(s) reading the results"
    if gate.junit_failed:
        text += f"; {gate.junit_failed} other test(s) failed"
    return text


def build(
    collection: Collection,
    gate: Gate,
    *,
    commit: Commit | None = None,
    run_url: str = "",
    junit: JUnitSummary | None = None,
    title: str = "onnx-gate",
    report_file: str = "report.md",
) -> ReportView:
    """The view of ``collection`` as ``gate`` judged it (ci_onnx.report.gate.decide)."""
    entries = collection.entries
    judged = [e for e in entries if e.result is not None and e.outcome not in (Status.EXPECTED,)]
    the_view = ReportView(
        title=title,
        headline=headline(gate, failing_kinds(gate)),
        blocks=gate.blocks,
        counts=_counts(entries),
        commit=commit or Commit(),
        run_url=run_url,
        failures=failures.failures(entries, gate, collection.config_path, blocking=True),
        problems=collection.problems,
        parity=parity.rows(judged, gate),
        fallback=fallback.rows(judged, gate),
        latency=latency.table(judged, gate),
        skips=tuple(
            Skip(e.target.id, e.reason) for e in entries if e.outcome in (Status.EXPECTED, Status.SKIPPED)
        ),
        junit=junit,
        baseline=gate.baseline.commit or "(unknown commit)" if gate.baseline is not None else "",
        report_file=report_file,
        overview=_overview(entries),
        precisions=precisions.rows(judged, gate),
        serving=serving.rows(judged, gate),
        reused=_reused(entries),
        bindings=_bindings(entries),
        accuracy=accuracy.rows(entries),
        known=failures.failures(entries, gate, collection.config_path, blocking=False),
        judged_by=versus.judged_by(gate),
        policy=gate.policy_changes,
        ledger=(
            *(f"⏰ {c.target.id}: {c.why}" for c in gate.cells if c.expired),
            *gate.stale,
            *(f"the baseline's {p}" for p in (gate.baseline.problems if gate.baseline else ())),
        ),
        comparison=versus.comparison(gate),
        triage=triage.rows(entries),
        profile=profile.rows(judged),
        knees=profile.knees(judged),
        charts=charts.charts(judged),
    )
    sections = models.sections(the_view, entries, gate, lambda g: headline(g, failing_kinds(g)))
    since = next((e.unchanged_since for e in entries if e.unchanged_since), "")
    why = next((e.reuse for e in entries if e.reuse), "")
    if since and not sections:  # one model: its line is the report's
        note = f"♻️ unchanged since {since[:7]}, not re-run: its results are the base's" + (
            f" ({why})" if why else ""
        )
        return dataclasses.replace(the_view, ledger=(note, *the_view.ledger))
    if why and not sections:  # one model, run again against a baseline: which input changed
        return dataclasses.replace(the_view, ledger=(f"🔁 {why}", *the_view.ledger))
    return dataclasses.replace(the_view, models=sections)
