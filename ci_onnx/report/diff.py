"""What changed on one target between the base commit and the head, figure by figure.

Parity drift (a passing output that uses much more of its tolerance than on the base) and placement
moves (nodes of the target's provider that now run on the CPU, new fallback op types; the shape
arithmetic onnxruntime keeps on the CPU on purpose does not count) are warnings. Serving figures are
compared with a noise rule (ci_onnx/report/noise.py): side by side where the verify stage timed the
base bundle beside the head's in one process, else against the base's stored figures with the wider
threshold, a warning unless ``gate.stored_figures: block``; the finding says which.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterator, Sequence

from ci_onnx.contracts.gate_settings import GateSettings, ServingRule
from ci_onnx.contracts.results import LatencyStat, TargetResult
from ci_onnx.report import noise

SERVING = "serving"
NOT_COMPARED = "serving not compared"
"""The head's model, runtime and providers are the base's, byte for byte: its serving figures are
shown, never judged against the base (a difference could only be the machine's noise)."""
IDENTICAL = (
    "identical model bytes, runtime and providers as the base's: the serving figures cannot have "
    "regressed through the model, so they are shown, not compared"
)
DRIFT = "parity drift"
PLACEMENT = "placement"
SIDE_BY_SIDE = "side by side"
STORED = "against the base's stored figures"
SEPARATE = "separate runs"
WARN_ONLY = frozenset({"cold_start"})
"""Figures measured once a side whose runs vary too much for one measurement to block: two no-op
cold starts of one fresh process each differed by up to 4.6× on a shared machine (bench/NOISE.md).
The tail of fewer than 100 timed runs is their maximum, one run, and likewise only warns (one
no-op run under act took 28 ms where its base's slowest took 0.05 ms)."""


@dataclasses.dataclass(frozen=True)
class Finding:
    target: str
    kind: str
    """``serving``, ``parity drift`` or ``placement``."""
    what: str
    """The figure: ``p50 latency, batch 8``, ``parity[logits]``, ``fallback``."""
    base: str
    head: str
    figure: str
    """The change as a reader weighs it: ``+96 %``, ``+3 node(s) on the CPU``."""
    test: str = ""
    """How a serving figure was judged: side by side or stored, the rank test, the threshold."""
    regression: bool = False
    """A serving figure past its noise rule (it blocks in regression mode); drift and placement
    findings are warnings and never set it."""
    blocks: bool = False
    """Set by the gate: a regression, in regression mode."""
    improved: bool = False
    """A serving figure that got better past the same rule, mirrored."""
    warning: bool = False
    """Past its threshold, but measured once a side where runs vary too much to block on one
    measurement (the cold start): shown, never blocking."""


def compare(head: TargetResult, base: TargetResult, settings: GateSettings) -> list[Finding]:
    found = [*_drift(head, base, settings.parity_drift), *_placement(head, base)]
    if identical(head, base):
        return [*found, Finding(head.target.id, NOT_COMPARED, "serving figures", "", "", "", IDENTICAL)]
    return [*found, *serving(head, base, settings)]


def serving(head: TargetResult, base: TargetResult, settings: GateSettings) -> list[Finding]:
    """The serving figures judged by their noise rules, whatever the bytes (``compare`` asks this
    only where the model differs; bench/bench_noise.py measures the rules on no-op copies)."""
    return list(_serving(head, base, settings.serving, block_stored=settings.stored_figures == "block"))


def identical(head: TargetResult, base: TargetResult) -> bool:
    """Whether the head timed the very model the base did, on the same runtime release with the same
    providers registered (the cell's id, its session options included, is the same by lookup): the
    model's sha256 fixes its graph, weights and input specs, from which the timed feeds are drawn."""
    h, b = head.observed.environment, base.observed.environment
    return (
        bool(head.bundle)
        and head.bundle == base.bundle
        and head.target.id == base.target.id
        and h is not None
        and b is not None
        and (h.runtime_version, h.providers_registered, h.runner)
        == (b.runtime_version, b.providers_registered, b.runner)
    )


def _drift(head: TargetResult, base: TargetResult, threshold: float) -> Iterator[Finding]:
    before = {p.output: p for p in base.parity}
    for p in head.parity:
        b = before.get(p.output)
        if b is None or p.worst_share is None or b.worst_share is None or not p.passed:
            continue
        grew = p.worst_share - b.worst_share
        if grew > threshold:
            yield Finding(
                head.target.id,
                DRIFT,
                f"parity[{p.output}]",
                f"{100 * b.worst_share:.0f} % of tolerance",
                f"{100 * p.worst_share:.0f} % of tolerance",
                f"+{100 * grew:.0f} points (still within tolerance)",
            )


def _ops(nodes: Sequence[str]) -> str:
    counts = Counter(nodes)
    return ", ".join(f"{op} ×{n}" if n > 1 else op for op, n in sorted(counts.items())) or "none"


def _placement(head: TargetResult, base: TargetResult) -> Iterator[Finding]:
    from ci_onnx.verify.compare import SHAPE_OPS

    h, b = head.observed.placement, base.observed.placement
    if head.target.provider == "cpu" or h is None or b is None:
        return
    now = [n.op_type for n in h.fallback_nodes if n.op_type not in SHAPE_OPS]
    before = [n.op_type for n in b.fallback_nodes if n.op_type not in SHAPE_OPS]
    more = Counter(now) - Counter(before)
    if not more:
        return
    new_ops = sorted(set(more) - set(before))
    moved = sum(more.values())
    yield Finding(
        head.target.id,
        PLACEMENT,
        "fallback",
        f"{len(before)} node(s) on the CPU: {_ops(before)}",
        f"{len(now)} node(s) on the CPU: {_ops(now)}",
        f"+{moved} node(s) moved to the CPU"
        + (f"; new fallback op(s): {', '.join(new_ops)}" if new_ops else ""),
    )


def _fmt_ms(x: float) -> str:
    return f"{x:.3g} ms"


def _finding(
    head: TargetResult, what: str, b: str, h: str, v: noise.Verdict, back: noise.Verdict, how: str
) -> Finding:
    """``back`` is the same rule with the sides swapped: past it, the figure improved."""
    return Finding(
        head.target.id,
        SERVING,
        what,
        b,
        h,
        f"{100 * (v.ratio - 1):+.0f} %",
        f"{how}; {v.test}",
        regression=v.regression,
        improved=back.regression,
    )


def _pairs(head: TargetResult, base: TargetResult) -> tuple[dict[int, tuple[LatencyStat, LatencyStat]], str]:
    """Per batch size, the (head, base) latency figures to compare, and how they were measured."""
    paired = head.observed.paired
    if paired is not None and base.bundle and paired.base_bundle == base.bundle:
        return _by_size(paired.head, paired.base), SIDE_BY_SIDE
    return _by_size(head.observed.latency, base.observed.latency), STORED


def _by_size(
    head: Sequence[LatencyStat], base: Sequence[LatencyStat]
) -> dict[int, tuple[LatencyStat, LatencyStat]]:
    by_base = {s.batch_size: s for s in base}
    return {s.batch_size: (s, by_base[s.batch_size]) for s in head if s.batch_size in by_base}


def _latency(
    head: TargetResult, base: TargetResult, rules: dict[str, ServingRule], *, block_stored: bool
) -> Iterator[Finding]:
    pairs, how = _pairs(head, base)
    for batch, (h, b) in sorted(pairs.items()):
        for figure in ("p50", "tail"):
            rule = rules[figure]
            threshold = rule.threshold if how == SIDE_BY_SIDE else (rule.stored_threshold or rule.threshold)
            p = rule.p or 0.01
            kind = "median" if figure == "p50" else "tail"
            if h.samples_ms and b.samples_ms:
                if how == SIDE_BY_SIDE and figure == "p50":  # run i against run i
                    v = noise.paired(h.samples_ms, b.samples_ms, threshold=threshold, p=p)
                    back = noise.paired(b.samples_ms, h.samples_ms, threshold=threshold, p=p)
                else:
                    v = noise.compare(h.samples_ms, b.samples_ms, threshold=threshold, p=p, figure=kind)
                    back = noise.compare(b.samples_ms, h.samples_ms, threshold=threshold, p=p, figure=kind)
                if figure == "p50":
                    label = "p50"
                    hv, bv = noise.statistics.median(h.samples_ms), noise.statistics.median(b.samples_ms)
                else:
                    (hv, label), bv = noise.tail(h.samples_ms), noise.tail(b.samples_ms)[0]
            else:  # a runner that records no samples: the percentiles, and the threshold alone
                label = figure if figure == "p50" else "p99"
                hv, bv = (h.p50_ms, b.p50_ms) if figure == "p50" else (h.p99_ms, b.p99_ms)
                v = noise.relative(hv, bv, threshold=threshold, what="no timed samples recorded")
                back = noise.relative(bv, hv, threshold=threshold, what="no timed samples recorded")
            what = f"{label} latency, batch {batch}"
            found = _finding(head, what, _fmt_ms(bv), _fmt_ms(hv), v, back, how)
            if label.startswith("max"):  # the tail of fewer than 100 runs is one run: it may warn only
                found = _warn_only(found, "the maximum is one run: a warning only")
            elif how == STORED and not block_stored:
                found = _warn_only(found, "stored figures: a warning only (gate.stored_figures)")
            yield found


def _warn_only(found: Finding, why: str) -> Finding:
    return dataclasses.replace(found, regression=False, warning=found.regression, test=f"{found.test}; {why}")


def _serving(
    head: TargetResult, base: TargetResult, rules: dict[str, ServingRule], *, block_stored: bool
) -> Iterator[Finding]:
    yield from _latency(head, base, rules, block_stored=block_stored)
    hs, bs = head.observed.serving, base.observed.serving
    figures: list[tuple[str, str, float | None, float | None, str]] = [
        (
            "cold_start",
            "cold start",
            hs.cold_start_ms if hs else None,
            bs.cold_start_ms if bs else None,
            "ms",
        ),
        ("peak_rss", "peak RSS", head.observed.peak_rss_mb, base.observed.peak_rss_mb, "MB"),
        (
            "model_size",
            "model size",
            _mib(hs.model_bytes if hs else None),
            _mib(bs.model_bytes if bs else None),
            "MB",
        ),
    ]
    for key, what, hv, bv, unit in figures:
        if hv is None or bv is None or hv != hv or bv != bv:  # not measured, or NaN
            continue
        threshold = rules[key].threshold
        how = "one measurement a side" + (", a warning only" if key in WARN_ONLY else "")
        v = noise.relative(hv, bv, threshold=threshold, what=how)
        back = noise.relative(bv, hv, threshold=threshold, what=how)
        found = _finding(head, what, f"{bv:.4g} {unit}", f"{hv:.4g} {unit}", v, back, SEPARATE)
        if key in WARN_ONLY:
            found = dataclasses.replace(found, regression=False, warning=found.regression)
        yield found


def _mib(n: int | None) -> float | None:
    return None if n is None else n / (1 << 20)
