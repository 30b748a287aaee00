"""The report against the base: the regressions table, the placement and serving diffs, the line
that says what the change did, and the serving diff's verdict as a table's "vs base" cell
(``serving_delta``; each table computes its own other deltas). Formatting only: what
changed and what blocks come from the gate (ci_onnx/report/gate.py, ci_onnx/report/diff.py)."""

from __future__ import annotations

from ci_onnx.contracts.gate_settings import Mode
from ci_onnx.contracts.results import TargetResult
from ci_onnx.report import diff
from ci_onnx.report.gate import Change, Gate, Summary
from ci_onnx.report.model import (
    Comparison,
    DiffRow,
    Regression,
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


def serving_delta(gate: Gate, target: str, *, latency: bool) -> str:
    """The "vs base" cell of the latency table (``latency``) or of the serving table (the other
    serving figures): the serving diff's verdict on the figures that moved."""
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


def _regressions(gate: Gate) -> list[Regression]:
    out: list[Regression] = []
    for c in gate.cells:
        if not c.is_failure or c.change not in (Change.NEWLY_FAILING, Change.NEW) or c.is_expected:
            continue
        r = _result(gate, c.target.id)
        head = {k.name: k for k in (r.checks if r else ())}
        base = gate.base(c.target.id)
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
