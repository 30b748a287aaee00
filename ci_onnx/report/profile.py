"""The serving profile of each target, formatted: per batch size and sweep point, the latency (its
tail named for the runs behind it), the throughput, the peak RSS, the first run against the warm
median; and, over the batch sizes, where the throughput stops growing.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Sequence

from ci_onnx.contracts.results import LatencyStat
from ci_onnx.report.collect import Entry

GROWTH = 0.10
"""Throughput that grows by less than this from one batch size to the next has stopped growing."""


@dataclasses.dataclass(frozen=True)
class ProfileRow:
    target: str
    point: str
    """``batch 8`` or ``seq=64 (2 per run)``."""
    p50: str
    p90: str
    tail: str
    """The tail with its honest name: ``p99`` from 100 runs on, else ``max of N``."""
    throughput: str
    """Items per second at the median."""
    peak_rss: str
    first: str
    """The first run at this shape against the warm median."""


def stats_of(entry: Entry) -> list[LatencyStat]:
    """The batch sizes' stats, then the sweep points', of a target that reported them."""
    r = entry.result
    return [*r.observed.latency, *r.observed.sweep_latency] if r is not None else []


def label(s: LatencyStat) -> str:
    return f"{s.point} ({s.batch_size} per run)" if s.point else f"batch {s.batch_size}"


def rows(entries: Sequence[Entry]) -> tuple[ProfileRow, ...]:
    out = []
    for e in entries:
        for s in stats_of(e):
            out.append(
                ProfileRow(
                    e.target.id,
                    label(s),
                    ms(s.p50_ms),
                    ms(s.p90_ms),
                    tail_text(s),
                    rate(s.throughput),
                    f"{s.peak_rss_mb:.0f}" if s.peak_rss_mb is not None else "—",
                    first_text(s),
                )
            )
    return tuple(out)


def rate(x: float) -> str:
    """Items per second: whole ones from 100 on (``29,720``), three figures below."""
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


def ms(x: float) -> str:
    return "—" if math.isnan(x) else (f"{x:.3g}" if x < 100 else f"{x:.0f}")


def tail_text(s: LatencyStat) -> str:
    """The tail figure and its name (LatencyStat.tail, what the gate compares too)."""
    figure, name = s.tail()
    return f"{ms(figure)} ({name})"


def first_text(s: LatencyStat) -> str:
    if s.first_ms is None or s.p50_ms <= 0:
        return "—"
    return f"{ms(s.first_ms)} vs {ms(s.p50_ms)} ({s.first_ms / s.p50_ms:.1f}×)"


def knees(entries: Sequence[Entry]) -> tuple[str, ...]:
    """Per target with two batch sizes timed or more: the batch size where its throughput stops
    growing (the next one adds less than GROWTH), or that it still grows at the largest."""
    out = []
    for e in entries:
        by_batch = sorted(e.result.observed.latency, key=lambda s: s.batch_size) if e.result else []
        if len(by_batch) < 2:
            continue
        out.append(f"`{e.target.id}`: {knee(by_batch)}")
    return tuple(out)


def knee(by_batch: Sequence[LatencyStat]) -> str:
    for here, after in itertools.pairwise(by_batch):
        gain = after.throughput / here.throughput - 1 if here.throughput else 0.0
        if gain < GROWTH:
            return (
                f"throughput stops growing at batch {here.batch_size} ({rate(here.throughput)} items/s; "
                f"batch {after.batch_size}: {rate(after.throughput)}, {gain:+.1%})"
            )
    last, before = by_batch[-1], by_batch[-2]
    gain = last.throughput / before.throughput - 1 if before.throughput else 0.0
    return (
        f"throughput still grows at batch {last.batch_size}, the largest timed ({rate(last.throughput)} "
        f"items/s, {gain:+.1%} on batch {before.batch_size}): a larger batch may serve more"
    )
