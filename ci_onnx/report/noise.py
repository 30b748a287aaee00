"""Is a timed figure slower on the head than on the base, beyond noise? (standard library only)

Side by side (base and head timed in turns in one process), run i of the head and run i of the base
shared the machine's moment, so their ratio is what is judged: a one-sided Wilcoxon signed-rank
test that the pairs' log ratio exceeds log(1 + threshold), at level ``p``, and the median of the
pair ratios past the threshold. Against stored figures (two processes, maybe two machines), two
tests must agree: the head's samples tend to be larger than the base's (a one-sided Mann-Whitney U
test) and the ratio of the medians is past the (wider) threshold. Both tests use the normal
approximation with tie and continuity corrections. The rank test keeps a large ratio of two noisy
sample sets from counting; the threshold keeps a tiny but consistent difference (a few percent,
which shared runners show between any two runs) from counting.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Sequence

from ci_onnx.contracts.results import tail  # the one naming of a tail, the judge's and the report's

MIN_SAMPLES = 8
"""Fewer timed runs a side cannot reach p < 0.01 with a rank test; such figures use the threshold
alone, and say so."""


@dataclasses.dataclass(frozen=True)
class Verdict:
    ratio: float
    """head / base of the compared figure (the medians, or the tails)."""
    p: float | None
    """The rank test's one-sided p-value (head larger); None where it was not run."""
    regression: bool
    test: str
    """How it was judged, for the report: "Mann-Whitney p = 3e-08, threshold 10 %"."""


def ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties sharing their average rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


def mann_whitney_greater(head: Sequence[float], base: Sequence[float]) -> float:
    """One-sided p-value of "head tends to be larger than base"."""
    n1, n2 = len(head), len(base)
    if not n1 or not n2:
        return 1.0
    combined = [*head, *base]
    r = ranks(combined)
    u = sum(r[:n1]) - n1 * (n1 + 1) / 2
    n = n1 + n2
    counts: dict[float, int] = {}
    for v in combined:
        counts[v] = counts.get(v, 0) + 1
    ties = sum(t**3 - t for t in counts.values())
    var = n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1))) if n > 1 else 0.0
    if var <= 0:
        return 1.0  # every value equal: no evidence either way
    z = (u - n1 * n2 / 2 - 0.5) / math.sqrt(var)
    return 0.5 * math.erfc(z / math.sqrt(2))


def wilcoxon_greater(d: Sequence[float]) -> float:
    """One-sided p-value of "the differences ``d`` tend to be positive" (signed-rank test)."""
    nonzero = [x for x in d if x != 0]
    n = len(nonzero)
    if n == 0:
        return 1.0
    r = ranks([abs(x) for x in nonzero])
    w = sum(ri for ri, x in zip(r, nonzero, strict=True) if x > 0)
    counts: dict[float, int] = {}
    for x in nonzero:
        counts[abs(x)] = counts.get(abs(x), 0) + 1
    var = n * (n + 1) * (2 * n + 1) / 24 - sum(t**3 - t for t in counts.values()) / 48
    if var <= 0:
        return 1.0
    z = (w - n * (n + 1) / 4 - 0.5) / math.sqrt(var)
    return 0.5 * math.erfc(z / math.sqrt(2))


def paired(head: Sequence[float], base: Sequence[float], *, threshold: float, p: float) -> Verdict:
    """Run i of the head against run i of the base, timed in turns: slower by more than
    ``threshold``, with evidence at level ``p``."""
    pairs = [(h, b) for h, b in zip(head, base, strict=False) if h > 0 and b > 0]
    ratio = statistics.median(h / b for h, b in pairs) if pairs else 1.0
    past = ratio > 1 + threshold
    if len(pairs) < MIN_SAMPLES:
        return Verdict(
            ratio, None, past, f"threshold {_pct(threshold)} alone ({len(pairs)} pairs are too few)"
        )
    margin = math.log1p(threshold)
    pv = wilcoxon_greater([math.log(h / b) - margin for h, b in pairs])
    return Verdict(
        ratio,
        pv,
        past and pv < p,
        f"Wilcoxon signed-rank p = {pv:.1g} that the {len(pairs)} pairs are over {_pct(threshold)} slower "
        f"(level {p:g})",
    )


def slower_half(samples: Sequence[float]) -> list[float]:
    ordered = sorted(samples)
    return ordered[len(ordered) // 2 :]


def _pct(x: float) -> str:
    return f"{100 * x:.0f} %"


def compare(
    head: Sequence[float],
    base: Sequence[float],
    *,
    threshold: float,
    p: float,
    figure: str = "median",
) -> Verdict:
    """Whether ``head`` regressed against ``base``: the ``figure`` (``median`` or ``tail``) grew by
    more than ``threshold`` and, with enough samples, the rank test says so at level ``p`` (for the
    tail, on the slower half of each side)."""
    if figure == "tail":
        h, b = tail(head)[0], tail(base)[0]
        tested_h, tested_b = slower_half(head), slower_half(base)
    else:
        h, b = statistics.median(head), statistics.median(base)
        tested_h, tested_b = list(head), list(base)
    ratio = h / b if b > 0 else math.inf if h > 0 else 1.0
    past = ratio > 1 + threshold
    if min(len(tested_h), len(tested_b)) < MIN_SAMPLES:
        return Verdict(
            ratio,
            None,
            past,
            f"threshold {_pct(threshold)} alone ({min(len(head), len(base))} runs a side are too few "
            "for the rank test)",
        )
    pv = mann_whitney_greater(tested_h, tested_b)
    return Verdict(
        ratio, pv, past and pv < p, f"Mann-Whitney p = {pv:.1g} (level {p:g}), threshold {_pct(threshold)}"
    )


def relative(head: float, base: float, *, threshold: float, what: str) -> Verdict:
    """A figure measured once a side (a cold start, a peak RSS, a size): the threshold alone."""
    ratio = head / base if base > 0 else math.inf if head > 0 else 1.0
    return Verdict(ratio, None, ratio > 1 + threshold, f"threshold {_pct(threshold)} alone ({what})")
