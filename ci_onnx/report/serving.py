"""The serving table: per cell, the cold start (import / session / first run), the first run against
warm runs, the sizes on disk and the serving budgets; against a baseline, the serving diff's verdict
on its figures other than latency.

One module per table (report/fallback.py): its rows from the judged entries, its delta from the
gate's findings (report/versus.serving_delta), its layout in templates/_tables.md.j2."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ci_onnx.report.collect import Entry
from ci_onnx.report.figures import fmt_ms
from ci_onnx.report.gate import Gate
from ci_onnx.report.model import ServingRow
from ci_onnx.report.versus import serving_delta


def rows(entries: Sequence[Entry], gate: Gate) -> tuple[ServingRow, ...]:
    """A row per cell whose runner reported serving figures."""
    rows = []
    for e in entries:
        s = e.result.observed.serving if e.result else None
        if e.result is None or s is None:
            continue
        cold = "—"
        if s.cold_start_ms is not None:
            cold = (
                f"{fmt_ms(s.cold_start_ms)} ({fmt_ms(s.import_ms or math.nan)} / "
                f"{fmt_ms(s.session_ms or math.nan)} / {fmt_ms(s.first_run_ms or math.nan)})"
            )
        elif (c := e.result.check("cold-start")) is not None:
            cold = f"not measured: {c.message.removeprefix('not measured: ').split(';')[0]}"
        first = "—"
        if s.first_run_ms is not None and s.warm_median_ms:
            ratio = s.first_run_ms / s.warm_median_ms
            first = f"{s.first_run_ms:.3g} vs {s.warm_median_ms:.3g} ({ratio:.1f}×)"
        budget_checks = [c for c in e.result.checks if c.name.startswith("budget[")]
        budgets = "; ".join(
            f"{'❌' if c.status.failing else '✅' if c.status.value == 'passed' else '⏭️'} {c.message}"
            for c in budget_checks
        )
        rows.append(
            ServingRow(
                e.target.id,
                cold,
                first,
                _mb(s.env_bytes),
                _mb(s.model_bytes),
                budgets or "—",
                any(c.status.failing for c in budget_checks),
                delta=serving_delta(gate, e.target.id, latency=False) if gate.baseline is not None else "",
            )
        )
    return tuple(rows)


def _mb(n: int | None) -> str:
    return "—" if n is None else f"{n / (1 << 20):.1f}" if n >= 1 << 20 else f"{n / (1 << 20):.3f}"
