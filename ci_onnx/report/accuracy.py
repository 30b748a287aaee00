"""The accuracy table: each target's top-1 on the labelled samples beside PyTorch's.

One row per ``accuracy`` check (ci_onnx/verify/accuracy.py: model.samples with ``labels`` or
``label:<output>`` arrays), so report.md shows the figures the check judged, at every precision.
"""

from __future__ import annotations

from collections.abc import Sequence

from ci_onnx.report.collect import Entry
from ci_onnx.report.model import AccuracyRow

CHECK = "accuracy"
"""ci_onnx.verify.accuracy.CHECK, not imported: the report reads results without numpy."""


def rows(entries: Sequence[Entry]) -> tuple[AccuracyRow, ...]:
    """Top-1 on the labelled samples (the ``accuracy`` checks), against PyTorch's on the same."""
    out = []
    for e in entries:
        for c in e.result.checks if e.result else ():
            f = c.figures
            if c.name.split("[")[0] != CHECK or "accuracy" not in f:  # the check's own name
                continue
            drop = float(f.get("drop_points", 0.0))
            pytorch = float(f.get("pytorch_accuracy", 0.0))
            out.append(
                AccuracyRow(
                    target=e.target.id,
                    output=str(f.get("output", "")),
                    samples=int(f.get("samples", 0)),
                    top1=f"{float(f['accuracy']):.2f} % ({f.get('correct', '?')})",
                    pytorch=f"{pytorch:.2f} % ({f.get('pytorch_correct', '?')})",
                    change=f"{-drop:+.2f} pts".replace("-", "−") if drop else "none",
                    verdict="❌" if c.status.failing else "✅",
                )
            )
    return tuple(out)
