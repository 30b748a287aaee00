"""The latency table: per cell, p50 / p90 per served batch size, session creation and peak memory;
against a baseline, the serving diff's verdict on its latency figures.

One module per table (report/fallback.py): its rows from the judged entries, its delta from the
gate's findings (report/versus.serving_delta), its layout in templates/_tables.md.j2."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ci_onnx.report.collect import Entry
from ci_onnx.report.figures import fmt_ms
from ci_onnx.report.gate import Gate
from ci_onnx.report.model import LatencyRow, LatencyTable
from ci_onnx.report.versus import serving_delta


def table(entries: Sequence[Entry], gate: Gate) -> LatencyTable:
    """A column per batch size any cell was timed at; a row per cell that was timed."""
    sizes = sorted({s.batch_size for e in entries if e.result for s in e.result.observed.latency})
    rows = []
    for e in entries:
        if e.result is None or not (obs := e.result.observed).latency:
            continue
        by_size = {s.batch_size: s for s in obs.latency}
        cells = tuple(
            f"{fmt_ms(by_size[b].p50_ms)} / {fmt_ms(by_size[b].p90_ms)}" if b in by_size else "—"
            for b in sizes
        )
        check = e.result.check("latency")
        rss = obs.peak_rss_mb
        rows.append(
            LatencyRow(
                e.target.id,
                cells,
                bool(check and check.status.failing),
                session=fmt_ms(obs.session_create_ms) if obs.session_create_ms else "—",
                peak_rss=f"{rss:.0f}" if rss and not math.isnan(rss) else "—",
                delta=serving_delta(gate, e.target.id, latency=True) if gate.baseline is not None else "",
            )
        )
    return LatencyTable(tuple(sizes), tuple(rows))
