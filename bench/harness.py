"""Timing harness for the benchmarks: interleaved runs, medians, ratios against an in-run baseline.

Every case of one comparison runs in turn (A, B, C, A, B, C, …) so that a noisy neighbour slows all
of them alike; each figure is the median of its runs and is reported as a ratio against the baseline
measured in the same run. Nothing here asserts a wall-clock limit.
"""

from __future__ import annotations

import dataclasses
import statistics
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

Case = Sequence[str] | Callable[[], object]


@dataclasses.dataclass(frozen=True)
class Timing:
    name: str
    runs: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.runs)

    @property
    def spread(self) -> float:
        """Half the interquartile range, as a share of the median: how noisy this case was."""
        if len(self.runs) < 4:
            return 0.0
        q = statistics.quantiles(self.runs, n=4)
        return (q[2] - q[0]) / 2 / self.median if self.median else 0.0


def _once(case: Case, cwd: Path | None, env: Mapping[str, str] | None) -> float:
    start = time.perf_counter()
    if callable(case):
        case()
    else:
        subprocess.run(
            list(case),
            cwd=cwd,
            env=dict(env) if env else None,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    return time.perf_counter() - start


def interleaved(
    cases: Mapping[str, Case],
    *,
    runs: int,
    warmup: int = 1,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> dict[str, Timing]:
    for _ in range(warmup):
        for case in cases.values():
            _once(case, cwd, env)
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(runs):
        for name, case in cases.items():
            times[name].append(_once(case, cwd, env))
    return {name: Timing(name, tuple(t)) for name, t in times.items()}


def table(timings: Mapping[str, Timing], baseline: str, *, extra: Mapping[str, str] | None = None) -> str:
    base = timings[baseline].median
    lines = ["| case | median | ratio to baseline | runs | spread (IQR/2) |", "|---|---|---|---|---|"]
    for name, t in timings.items():
        lines.append(
            f"| {name}{' (baseline)' if name == baseline else ''} | {t.median * 1000:.0f} ms | "
            f"{t.median / base:.2f}× | {len(t.runs)} | ±{t.spread * 100:.0f}% |"
        )
    for key, value in (extra or {}).items():
        lines.append(f"| {key} | {value} | | | |")
    return "\n".join(lines)
