"""One line per triaged failing cell (ci_onnx.triage): its fault class and node, or why the triage
stopped, with the evidence and the error along the path folded beneath it."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from ci_onnx.report.collect import Entry


@dataclasses.dataclass(frozen=True)
class TriageRow:
    target: str
    line: str
    """The one line: class, node, evidence in brief, the reproduction; or why it stopped."""
    details: tuple[str, ...]
    """The evidence, the references compared, what could not be, and how long it took."""
    path: tuple[tuple[str, str, str, str], ...]
    """(node, op, max abs, times the tolerance) from the first divergence to the failing output."""


def rows(entries: Sequence[Entry]) -> tuple[TriageRow, ...]:
    out = []
    for e in entries:
        t = e.result.triage if e.result is not None else None
        if t is None or not e.outcome.failing:
            continue
        if t.fault is not None:
            repro = (
                f"; repro: `python {t.reproduction}/reproduce.py` ({t.reproduction_bytes / 1024:.1f} KB, "
                "beside results/; in CI, in the cell's results artifact)"
                if t.reproduction
                else ""
            )
            line = f"{t.summary}{repro}"
        else:
            line = f"{t.check}: triage stopped: {t.stopped}"
        details = (
            *t.evidence,
            *(f"note: {n}" for n in t.notes),
            f"compared: {', '.join(t.compared) or 'nothing'}; took {t.duration_s:.1f} s",
        )
        path = tuple((r.node, r.op_type, _num(r.max_abs), _num(r.share) + "×") for r in t.path)
        out.append(TriageRow(e.target.id, line, details, path))
    return tuple(out)


def _num(x: float) -> str:
    """A figure of the path; the JSON-safe stand-in for infinity (1e300: a shape, NaN or integer that
    differs) reads as ∞."""
    return "∞" if x >= 1e299 else f"{x:.3g}"
