"""Latency (its samples and percentiles) and peak memory of a running session (stdlib + numpy only)."""

from __future__ import annotations

import dataclasses
import resource
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ci_onnx.contracts.results import LatencyStat

WARMUP_RUNS = 3
SWEEP_BUDGET_MS = 2000.0
"""How long the timed runs of one sweep point may take, judged by its first run: a point serves as
a profile figure, never a verdict, and a long sequence on a slow provider (a software GPU) must not
spend a target's timeout on timing."""
PAIRED_WARMUP = 10
"""Warm-up turns of each fresh session before the pairs are timed (its arena grows in the first runs)."""
PAIRED_RUNS = 60
"""Timed turns of each side when a base bundle is timed beside the head's (at least; more where
verify.latency_runs asks): a rank test of 60 pairs tells twice the work from a no-op on a shared,
busy machine where 20 could not (bench/NOISE.md)."""


def _timed(run: Callable[[], object]) -> float:
    start = time.perf_counter()
    run()
    return (time.perf_counter() - start) * 1000.0


def stat(batch_size: int, times: list[float]) -> LatencyStat:
    """p50/p90/p99 of ``times`` (ms), and the samples themselves: a comparison needs them."""
    p50, p90, p99 = np.percentile(np.array(times), [50, 90, 99])
    samples = tuple(round(t, 4) for t in times)
    return LatencyStat(
        batch_size, round(float(p50), 4), round(float(p90), 4), round(float(p99), 4), len(times), samples
    )


def sweep_runs(first_ms: float, runs: int) -> tuple[int, int]:
    """(warm-up runs, timed runs) of a sweep point whose first run took ``first_ms``: at most
    ``runs`` timed, as many as fit SWEEP_BUDGET_MS but at least one, and fewer warm-ups where the
    timed runs are few (the first run is a warm-up of its own). The runners' observers apply the
    same rule (runners/node/common.mjs, runners/native/observe.c)."""
    timed = max(1, min(runs, int(SWEEP_BUDGET_MS / max(first_ms, 1e-3))))
    return min(WARMUP_RUNS, timed - 1), timed


def latency(
    batch_size: int,
    run: Callable[[], object],
    runs: int,
    *,
    point: str = "",
    first_ms: float | None = None,
    warmups: int = WARMUP_RUNS,
) -> LatencyStat:
    """``runs`` timed calls after ``warmups`` warm-up calls, the RSS sampled after each;
    ``first_ms``: the session's first run at this shape where the caller timed it, else the first
    warm-up call's."""
    first = first_ms if first_ms is not None else _timed(run)
    for _ in range(warmups - (first_ms is None)):
        run()
    times: list[float] = []
    peak = rss_mb()
    for _ in range(runs):
        times.append(_timed(run))
        now = rss_mb()
        peak = max(peak, now) if peak is not None and now is not None else peak
    return dataclasses.replace(
        stat(batch_size, times),
        point=point,
        first_ms=round(first, 4),
        peak_rss_mb=round(peak, 2) if peak is not None else None,
    )


def interleaved(
    batch_size: int, head: Callable[[], object], base: Callable[[], object], runs: int
) -> tuple[LatencyStat, LatencyStat]:
    """Head and base timed in turns, the order swapped every run, so that whatever the machine
    does meanwhile (another job, a frequency change) falls on both alike."""
    for _ in range(PAIRED_WARMUP):
        head()
        base()
    h: list[float] = []
    b: list[float] = []
    for i in range(runs):
        if i % 2:
            b.append(_timed(base))
            h.append(_timed(head))
        else:
            h.append(_timed(head))
            b.append(_timed(base))
    return stat(batch_size, h), stat(batch_size, b)


def rss_mb() -> float | None:
    """The current resident set size, where /proc tells it."""
    statm = Path("/proc/self/statm")
    if not statm.is_file():
        return None
    pages = int(statm.read_text().split()[1])
    return pages * resource.getpagesize() / (1 << 20)


def lifetime_peak_rss_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1 << 20) if sys.platform == "darwin" else peak / 1024.0


def peak_rss_while(run: Callable[[], object], threads: int, runs_each: int, min_s: float = 0.25) -> float:
    """Peak RSS (MB) sampled while ``threads`` threads each call ``run`` ``runs_each`` times, and for at
    least ``min_s`` seconds, so that a fast model is still sampled while it serves.

    Where /proc is missing the process's lifetime peak is returned instead (an upper bound).
    """
    if rss_mb() is None:
        workers = [threading.Thread(target=lambda: [run() for _ in range(runs_each)]) for _ in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        return lifetime_peak_rss_mb()
    peak = rss_mb() or 0.0
    errors: list[BaseException] = []

    deadline = time.monotonic() + min_s

    def serve() -> None:
        try:
            done = 0
            while done < runs_each or time.monotonic() < deadline:
                run()
                done += 1
        except BaseException as exc:  # reported by the caller
            errors.append(exc)

    workers = [threading.Thread(target=serve) for _ in range(threads)]
    for w in workers:
        w.start()
    while any(w.is_alive() for w in workers):
        peak = max(peak, rss_mb() or 0.0)
        time.sleep(0.002)
    for w in workers:
        w.join()
    if errors:
        raise errors[0]
    return round(max(peak, rss_mb() or 0.0), 2)
