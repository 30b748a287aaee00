"""The parity table: per cell and output, the worst differences, the tolerance, how many elements
fell outside it, the error figures and the decisions; against a baseline, what moved.

One module per table (report/fallback.py): its rows from the judged entries (and the base's results,
for the delta), its row type in report/model.py, its layout in templates/_tables.md.j2."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from ci_onnx.contracts.results import SQNR_CAP_DB, TargetResult
from ci_onnx.report.collect import Entry
from ci_onnx.report.figures import fmt_num
from ci_onnx.report.gate import Change, Gate
from ci_onnx.report.model import ParityRow


def rows(entries: Sequence[Entry], gate: Gate) -> tuple[ParityRow, ...]:
    found = tuple(row for e in entries if e.result for row in _rows(e, e.result))
    if gate.baseline is None:
        return found
    return tuple(dataclasses.replace(r, delta=_delta(gate, r)) for r in found)


def _rows(entry: Entry, r: TargetResult) -> list[ParityRow]:
    """One row per output: its worst differences, its tolerance and how many elements fell outside."""
    d = r.decisions
    decisions_changed = bool(d and d.changed)
    rows = []
    for i, p in enumerate(r.parity):
        why = [
            w
            for w, bad in (("out of tolerance", not p.passed), ("decisions changed", decisions_changed))
            if bad
        ]
        outside = f"{p.out_of_tolerance} of {p.elements}"
        if p.shape_mismatch:
            outside = f"shape: {p.shape_mismatch}"
        rows.append(
            ParityRow(
                target=entry.target.id,
                runtime=entry.target.runtime,
                provider=entry.target.provider,
                opset=entry.target.opset,
                exporter=entry.target.exporter,
                output=p.output,
                max_abs=fmt_num(p.max_abs),
                max_rel=fmt_num(p.max_rel),
                tolerance=f"atol {p.atol:g} + rtol {p.rtol:g}",
                outside=outside,
                worst=f"{100 * p.worst_share:.0f} %" if p.worst_share is not None else "—",
                error=_error_figures(p.sqnr_db, p.cosine),
                decisions=(f"{d.changed} / {d.total}" if d else "—") if i == 0 else "",
                verdict="❌ " + ", ".join(why) if why else "✅",
                failed=bool(why),
            )
        )
    return rows


def _error_figures(sqnr_db: float | None, cosine: float | None) -> str:
    if sqnr_db is None and cosine is None:
        return "—"
    db = "—" if sqnr_db is None else ("exact" if sqnr_db >= SQNR_CAP_DB else f"{sqnr_db:.1f} dB")
    return f"{db}, {'—' if cosine is None else f'{cosine:.5f}'}"


def _delta(gate: Gate, row: ParityRow) -> str:
    cell = gate.cell(row.target)
    base = gate.base(row.target)
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
