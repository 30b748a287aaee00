"""The CPU-fallback table: per accelerator cell, how many nodes ran on the provider and on the CPU, the
CPU's share of the time, the ops that fell back, and, against a baseline, what moved.

One module per table: its rows from the judged entries (and the base's results, for the delta), its
row type in report/model.py, its layout in templates/_tables.md.j2."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence

from ci_onnx import matrix
from ci_onnx.contracts.results import TargetResult
from ci_onnx.report.collect import Entry
from ci_onnx.report.figures import fmt_share
from ci_onnx.report.gate import Change, Gate
from ci_onnx.report.model import FallbackRow


def cpu_ep() -> str:
    """The execution provider name of the CPU, as providers.toml gives it."""
    return matrix.providers()["cpu"].ep


def rows(entries: Sequence[Entry], gate: Gate) -> tuple[FallbackRow, ...]:
    """One row per judged cell that ran on a provider other than the CPU and reported placement."""
    found = tuple(row for e in entries if e.result and (row := _row(e, e.result)))
    if gate.baseline is None:
        return found
    return tuple(dataclasses.replace(r, delta=_delta(gate, r)) for r in found)


def _row(entry: Entry, r: TargetResult) -> FallbackRow | None:
    p = r.observed.placement
    if p is None or entry.target.provider == "cpu":
        return None
    on_cpu = p.nodes_by_provider.get(cpu_ep(), 0)
    on_provider = sum(n for ep, n in p.nodes_by_provider.items() if ep != cpu_ep())
    ops = Counter(n.op_type for n in p.fallback_nodes)
    op_text = ", ".join(f"{op} ×{n}" if n > 1 else op for op, n in sorted(ops.items())) or "—"
    check = r.check("fallback")
    failed = bool(check and check.status.failing)
    return FallbackRow(
        target=entry.target.id,
        provider=entry.target.provider,
        on_provider=on_provider,
        on_cpu=on_cpu,
        cpu_share=fmt_share(p.cpu_time_share),
        ops=op_text,
        verdict="❌ over budget" if failed else "✅",
        failed=failed,
    )


def _delta(gate: Gate, row: FallbackRow) -> str:
    base = gate.base(row.target)
    if base is None or base.observed.placement is None:
        return "new cell" if (c := gate.cell(row.target)) and c.change is Change.NEW else "—"
    before = base.observed.placement.nodes_by_provider.get(cpu_ep(), 0)
    return "=" if before == row.on_cpu else f"{before} → {row.on_cpu} nodes on CPU"
