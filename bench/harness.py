"""Timing harness for the benchmarks: interleaved runs, medians, ratios against an in-run baseline.

Every case of one comparison runs in turn (A, B, C, A, B, C, …) so that a noisy neighbour slows all
of them alike; each figure is the median of its runs and is reported as a ratio against the baseline
measured in the same run. Nothing here asserts a wall-clock limit.
"""

from __future__ import annotations

import dataclasses
import os
import statistics
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path


@dataclasses.dataclass(frozen=True)
class Command:
    """A child process to time: its argv, extra environment, and the exit codes that count as done."""

    argv: tuple[str, ...]
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)
    ok: frozenset[int] = frozenset({0})


Case = Command | Sequence[str] | Callable[[], object]


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


class CaseFailed(RuntimeError):
    """A timed command did not finish as expected, so its time means nothing."""


def _once(case: Case, cwd: Path | None, env: Mapping[str, str] | None) -> float:
    start = time.perf_counter()
    if callable(case):
        case()
    else:
        command = case if isinstance(case, Command) else Command(tuple(case))
        merged = {**os.environ, **(env or {}), **command.env} if (env or command.env) else None
        done = subprocess.run(
            list(command.argv),
            cwd=cwd,
            env=merged,
            check=False,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        if done.returncode not in command.ok:
            raise CaseFailed(
                f"{' '.join(command.argv[:4])} … exited {done.returncode}: "
                f"{done.stderr.decode(errors='replace')[-2000:]}"
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


def table(
    timings: Mapping[str, Timing],
    baseline: str,
    *,
    names: Sequence[str] | None = None,
    extra: Mapping[str, str] | None = None,
) -> str:
    """One row per case (``names`` picks and orders them): median, ratio to and time above the baseline."""
    base = timings[baseline].median
    lines = [
        "| case | median | ratio to baseline | above baseline | runs | spread (IQR/2) |",
        "|---|---|---|---|---|---|",
    ]
    for name in names or list(timings):
        t = timings[name]
        spread = f"±{t.spread * 100:.0f}%" if len(t.runs) >= 4 else "—"
        above = "" if name == baseline else f"{(t.median - base) * 1000:+.0f} ms"
        lines.append(
            f"| {name}{' (baseline)' if name == baseline else ''} | {t.median * 1000:.0f} ms | "
            f"{t.median / base:.2f}× | {above} | {len(t.runs)} | {spread} |"
        )
    for key, value in (extra or {}).items():
        lines.append(f"| {key} | {value} | | | | |")
    return "\n".join(lines)


def ratio(timings: Mapping[str, Timing], case: str, baseline: str) -> float:
    return timings[case].median / timings[baseline].median


def above(timings: Mapping[str, Timing], case: str, baseline: str) -> float:
    """Seconds ``case`` takes beyond ``baseline`` (medians)."""
    return timings[case].median - timings[baseline].median


def verdict(met: bool, figure: str, target: str) -> str:
    return f"**{'met' if met else 'missed'}**: {figure} (target: {target})"


@dataclasses.dataclass(frozen=True)
class Section:
    """One measure's part of RESULTS.md."""

    title: str
    body: str

    def markdown(self) -> str:
        return f"## {self.title}\n\n{self.body.strip()}\n"
