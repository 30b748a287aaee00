"""The report of a gate of several models: one line per model, and each model's own tables.

Every table of the report is split by the model of its rows' targets; a model whose targets all
passed (or that is unchanged since the base and passed there) has its tables folded. What each
model's line says is what the gate says of its cells alone (ci_onnx/report/view.py's headline).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from ci_onnx.report.collect import Entry
from ci_onnx.report.gate import Gate
from ci_onnx.report.model import LatencyTable, ModelSection, ReportView


def sections(
    view: ReportView,
    entries: Sequence[Entry],
    gate: Gate,
    headline: Callable[[Gate], str],
) -> tuple[ModelSection, ...]:
    """One section per model, in the order of the entries; none for the single ``model`` form."""
    models = list(dict.fromkeys(e.target.model for e in entries))
    if models == [""]:
        return ()
    out = []
    for model in models:
        mine = [e for e in entries if e.target.model == model]
        ids = {e.target.id for e in mine}
        sub = dataclasses.replace(
            gate,
            cells=tuple(c for c in gate.cells if c.target.model == model),
            findings=tuple(f for f in gate.findings if f.target in ids),
            removed=tuple(r for r in gate.removed if r.startswith(f"{model}.")),
            problems=(),
            junit_failed=0,
        )
        blocks = bool(sub.blocking) or any(f.blocks for f in sub.findings)
        since = next((e.unchanged_since for e in mine if e.unchanged_since), "")
        why = next((e.reuse for e in mine if e.reuse), "")
        if since:  # its results are the base's: what they say, not what changed (nothing did)
            there = headline(dataclasses.replace(sub, baseline=None))
            because = f" ({why})" if why else ""
            line = f"unchanged since {since[:7]}, not re-run{because}; {there}"
        else:
            line = f"{headline(sub)} ({why})" if why else headline(sub)
        failing = any(c.is_failure for c in sub.cells)
        out.append(
            ModelSection(
                model=model,
                icon="❌" if blocks else ("⚠️" if failing else "✅"),
                line=line,
                folded=not failing and not blocks,
                parity=_of(view.parity, ids),
                precisions=_of(view.precisions, ids),
                fallback=_of(view.fallback, ids),
                latency=_latency(view.latency, ids),
                accuracy=_of(view.accuracy, ids),
                serving=_of(view.serving, ids),
            )
        )
    return tuple(out)


def _of(rows: Sequence[Any], ids: set[str]) -> tuple[Any, ...]:
    return tuple(r for r in rows if r.target in ids)


def _latency(table: LatencyTable, ids: set[str]) -> LatencyTable:
    """The model's rows, without the batch sizes none of them served."""
    rows = [r for r in table.rows if r.target in ids]
    keep = [i for i in range(len(table.batch_sizes)) if any(r.cells[i] != "—" for r in rows)]
    return LatencyTable(
        tuple(table.batch_sizes[i] for i in keep),
        tuple(dataclasses.replace(r, cells=tuple(r.cells[i] for i in keep)) for r in rows),
    )
