"""Latency percentiles and peak memory of a running session (stdlib + numpy only)."""

from __future__ import annotations

import resource
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ci_onnx.results import LatencyStat

WARMUP_RUNS = 3


def latency(batch_size: int, run: Callable[[], object], runs: int) -> LatencyStat:
    """p50/p90/p99 of ``runs`` timed calls after a warm-up."""
    for _ in range(WARMUP_RUNS):
        run()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1000.0)
    p50, p90, p99 = np.percentile(np.array(times), [50, 90, 99])
    return LatencyStat(batch_size, round(float(p50), 4), round(float(p90), 4), round(float(p99), 4), runs)


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
