"""The report against the base: the "vs base" column of every table, the regressions table, the
placement and serving diffs, and the line that says what the change did. Formatting only: what
changed and what blocks come from the gate (ci_onnx/report/gate.py, ci_onnx/report/diff.py)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from ci_onnx.contracts.gate_settings import Mode
from ci_onnx.contracts.results import TargetResult
from ci_onnx.report import diff
from ci_onnx.report.gate import Change, Gate, Summary
from ci_onnx.report.model import (
    Comparison,
    DiffRow,
    LatencyTable,
    ParityRow,
    PrecisionRow,
    Regression,
    ServingRow,
)


def _n(count: int, word: str, plural: str = "") -> str:
    return f"{count} {word if count == 1 else plural or word + 's'}"


def changed(s: Summary) -> str:
    """``2 regressions, 1 fixed, 14 unchanged (3 known failures, 1 expected)``."""
    parts = [_n(s.regressions, "regression"), f"{s.fixed} fixed", f"{s.unchanged} unchanged"]
    if s.new:
        parts.append(f"{s.new} new")
    if s.removed:
        parts.append(f"{s.removed} removed")
    inner = [_n(s.known, "known failure")] if s.known else []
    if s.expected:
        inner.append(f"{s.expected} expected")
    return ", ".join(parts) + (f" ({', '.join(inner)})" if inner else "")


def judged_by(gate: Gate) -> str:
    """The mode, why, and the baseline: said in the report and on the terminal."""
    rule = "every failure blocks" if gate.mode is Mode.ABSOLUTE else "what changed against the base blocks"
    text = (
        f"{gate.mode.value} mode ({rule}; {gate.mode_why})"
        if gate.mode_why
        else f"{gate.mode.value} mode ({rule})"
    )
    b = gate.baseline
    if b is None:
        return text + (f"; policy: {gate.policy_source}" if gate.policy_source.startswith("no base") else "")
    text += f"; compared with `{b.short}` ({b.source})"
    if gate.policy_source:
        text += f"; judged by the policy of {gate.policy_source}"
    if b.note:
        text += f"; {b.note}"
    return text


def _base(gate: Gate, target_id: str) -> TargetResult | None:
    return gate.baseline.results.get(target_id) if gate.baseline is not None else None


def _parity_delta(gate: Gate, row: ParityRow) -> str:
    cell = gate.cell(row.target)
    base = _base(gate, row.target)
    if cell is not None and cell.change is Change.NEW:
        return "new cell"
    if base is None:
        return "—"
    b = next((p for p in base.parity if p.output == row.output), None)
    if b is None:
        return "new output"
    worst = f"{100 * b.worst_share:.0f} %" if b.worst_share is not None else "—"
    if not b.passed and not row.failed:
        return f"✅ fixed (was out of tolerance, worst {worst})"
    if b.passed and row.failed:
        return f"❌ was within tolerance (worst {worst})"
    return "=" if worst == row.worst else f"worst {worst} → {row.worst}"


def _serving_delta(gate: Gate, target: str, latency: bool) -> str:
    found = [
        f
        for f in gate.findings
        if f.target == target and f.kind == diff.SERVING and ("latency" in f.what) == latency
    ]
    if not found:
        if any(f.target == target and f.kind == diff.NOT_COMPARED for f in gate.findings):
            return "identical model: not compared"
        return "new cell" if (c := gate.cell(target)) and c.change is Change.NEW else "—"
    moved = [f for f in found if f.regression or f.improved]
    if not moved:
        return "within noise"
    return "; ".join(f"{'❌' if f.regression else '✅'} {f.what} {f.figure}" for f in moved)


def _precision_deltas(gate: Gate, rows: Sequence[PrecisionRow]) -> tuple[PrecisionRow, ...]:
    """Size and accuracy against the same precision of the same cell on the base (latency has its
    own comparison, with a noise rule, in the serving diff)."""
    from ci_onnx.report import precisions
    from ci_onnx.report.collect import Entry

    b = gate.baseline
    results = b.results.values() if b is not None else ()
    before = {r.target: r for r in precisions.rows([Entry(x.target, x.status, x) for x in results])}
    out = []
    for r in rows:
        was = before.get(r.target)
        if was is None:
            delta = "—"
        else:
            moved = [
                f"{what} {a} → {h}"
                for what, a, h in (("size", was.size, r.size), ("top-1", was.accuracy, r.accuracy))
                if a != h
            ]
            delta = "; ".join(moved) or "="
        out.append(dataclasses.replace(r, delta=delta))
    return tuple(out)


def with_deltas(
    gate: Gate,
    parity: Sequence[ParityRow],
    latency: LatencyTable,
    serving: Sequence[ServingRow],
    precision: Sequence[PrecisionRow] = (),
) -> tuple[
    tuple[ParityRow, ...],
    LatencyTable,
    tuple[ServingRow, ...],
    tuple[PrecisionRow, ...],
]:
    return (
        tuple(dataclasses.replace(r, delta=_parity_delta(gate, r)) for r in parity),
        LatencyTable(
            latency.batch_sizes,
            tuple(dataclasses.replace(r, delta=_serving_delta(gate, r.target, True)) for r in latency.rows),
        ),
        tuple(dataclasses.replace(r, delta=_serving_delta(gate, r.target, False)) for r in serving),
        _precision_deltas(gate, precision),
    )


def _regressions(gate: Gate) -> list[Regression]:
    out: list[Regression] = []
    for c in gate.cells:
        if not c.is_failure or c.change not in (Change.NEWLY_FAILING, Change.NEW) or c.is_expected:
            continue
        r = _result(gate, c.target.id)
        head = {k.name: k for k in (r.checks if r else ())}
        base = _base(gate, c.target.id)
        before = {k.name: k.status.value for k in base.checks} if base else {}
        for check in c.failing:
            if base is not None and check in before and before[check] in ("failed", "error"):
                continue  # it failed there too: not what this change did
            message = head[check].message if check in head else c.why
            was = before.get(check, "(new cell)" if c.change is Change.NEW else "—")
            out.append(Regression(c.target.id, check, was, c.outcome.value, message))
    for f in gate.findings:
        if f.regression:
            out.append(Regression(f.target, f.what, f.base, f.head, f"{f.figure} ({f.test})"))
    return out


def _result(gate: Gate, target_id: str) -> TargetResult | None:
    cell = gate.cell(target_id)
    return cell.result if cell is not None else None


def _row(f: diff.Finding) -> DiffRow:
    if f.kind != diff.SERVING:
        verdict = "⚠️ warning"
    elif f.regression:
        verdict = "❌ regression" + ("" if f.blocks else " (not blocking: absolute mode)")
    elif f.warning:
        verdict = "⚠️ past its threshold, not blocking"
    elif f.improved:
        verdict = "✅ improved"
    else:
        verdict = "within noise"
    return DiffRow(f.target, f.what, f.base, f.head, f.figure, verdict, f.test)


def _pct(x: float | None) -> str:
    return f"{100 * (x or 0):.0f} %"


def _tests(gate: Gate, used: set[str]) -> list[str]:
    """How the serving figures were compared, in words, for the contexts this comparison used."""
    rules = gate.settings.serving
    p50, tail = rules["p50"], rules["tail"]
    out = []
    if diff.SIDE_BY_SIDE in used:
        out.append(
            "latency side by side (the base bundle timed in turns with the head's in one process): the "
            f"pairs of turns by a one-sided Wilcoxon signed-rank test at p < {p50.p:g} that they are over "
            f"{_pct(p50.threshold)} slower (median); the tail ({_pct(tail.threshold)}) of fewer than 100 "
            "runs warns only"
        )
    if diff.STORED in used:
        warn = (
            "" if gate.settings.stored_figures == "block" else ", warnings only (gate.stored_figures: warn)"
        )
        out.append(
            "latency against the base's stored figures (another run, maybe another machine) with the "
            f"wider thresholds of {_pct(p50.stored_threshold)} (median) and {_pct(tail.stored_threshold)} "
            f"(tail){warn}"
        )
    if diff.SEPARATE in used:
        alone = ", ".join(_pct(rules[k].threshold) for k in ("peak_rss", "model_size"))
        out.append(
            f"peak RSS and model size by their thresholds alone ({alone}: one measurement a side); a cold "
            f"start past {_pct(rules['cold_start'].threshold)} warns only"
        )
    return out


def comparison(gate: Gate) -> Comparison | None:
    if gate.baseline is None:
        return None
    serving = [f for f in gate.findings if f.kind == diff.SERVING]
    tests = _tests(gate, {f.test.split(";")[0] for f in serving})
    return Comparison(
        regressions=tuple(_regressions(gate)),
        fixed=tuple(c.target.id for c in gate.cells if c.change is Change.FIXED),
        new=tuple(c.target.id for c in gate.cells if c.change is Change.NEW),
        removed=gate.removed,
        placement=tuple(_row(f) for f in gate.findings if f.kind == diff.PLACEMENT),
        serving=tuple(_row(f) for f in serving if f.regression or f.improved or f.warning),
        serving_unchanged=sum(1 for f in serving if not (f.regression or f.improved or f.warning)),
        drift=tuple(_row(f) for f in gate.findings if f.kind == diff.DRIFT),
        tests=tuple(tests),
        not_compared=tuple(f.target for f in gate.findings if f.kind == diff.NOT_COMPARED),
        not_compared_why=diff.IDENTICAL,
    )
