"""Building the view model (ci_onnx/report/model.py) from a Collection: verdicts, counts, figures.

Templates only lay the view out. A later base-branch comparison fills ``baseline`` and each row's
``delta``; the templates already show them when present.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from ci_onnx.report.collect import Collection, Entry, Outcome
from ci_onnx.report.junit_reader import JUnitSummary
from ci_onnx.report.model import (
    Commit,
    Counts,
    FailedCheck,
    Failure,
    FallbackRow,
    LatencyRow,
    LatencyTable,
    ParityRow,
    ReportView,
    Skip,
)
from ci_onnx.results import TargetResult

ICON = {
    Outcome.PASSED: "✅",
    Outcome.FAILED: "❌",
    Outcome.ERROR: "💥",
    Outcome.MISSING: "⚠️",
    Outcome.EXPECTED: "⏭️",
    Outcome.SKIPPED: "⏭️",
}
CPU_EP = "CPUExecutionProvider"


def fmt_num(x: float | None) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    if x == 0:
        return "0"
    return f"{x:.2e}" if abs(x) < 1e-3 or abs(x) >= 1e4 else f"{x:.4g}"


def fmt_ms(x: float) -> str:
    return "—" if math.isnan(x) else (f"{x:.2f}" if x < 100 else f"{x:.0f}")


def fmt_share(x: float) -> str:
    return f"{100 * x:.1f} %"


def default_reproduce(entry: Entry, config_path: str = "") -> str:
    """A command that reproduces this one target on a laptop: with the config known (from the plan),
    `onnx-gate run` exports and verifies that cell alone; else verify on a bundle already exported."""
    t = entry.target
    if config_path:
        return f"onnx-gate run --config {config_path} --only '{t.id}'"
    return f"onnx-gate verify --bundle onnx-gate-out/bundles/{t.bundle_key} --target {t.id}"


def _parity_row(entry: Entry, r: TargetResult) -> ParityRow:
    worst_abs = max((p.max_abs for p in r.parity), default=float("nan"))
    worst_rel = max((p.max_rel for p in r.parity), default=float("nan"))
    parity_failed = any(not p.passed for p in r.parity)
    d = r.decisions
    decisions = f"{d.changed} / {d.total}" if d else "—"
    failed = parity_failed or bool(d and d.changed)
    why = [
        w for w, bad in (("out of tolerance", parity_failed), ("decisions changed", d and d.changed)) if bad
    ]
    verdict = "❌ " + ", ".join(why) if failed else "✅"
    return ParityRow(
        target=entry.target.id,
        runtime=entry.target.runtime,
        provider=entry.target.provider,
        opset=entry.target.opset,
        exporter=entry.target.exporter,
        max_abs=fmt_num(worst_abs),
        max_rel=fmt_num(worst_rel),
        decisions=decisions,
        verdict=verdict,
        failed=failed,
    )


def _fallback_row(entry: Entry, r: TargetResult) -> FallbackRow | None:
    p = r.placement
    if p is None or entry.target.provider == "cpu":
        return None
    on_cpu = p.nodes_by_provider.get(CPU_EP, 0)
    on_provider = sum(n for ep, n in p.nodes_by_provider.items() if ep != CPU_EP)
    ops = Counter(n.op_type for n in p.fallback_nodes)
    op_text = ", ".join(f"{op} ×{n}" if n > 1 else op for op, n in sorted(ops.items())) or "—"
    check = r.check("fallback")
    failed = bool(check and check.status.blocks)
    verdict = "❌ over budget" if failed else "✅"
    return FallbackRow(
        target=entry.target.id,
        provider=entry.target.provider,
        on_provider=on_provider,
        on_cpu=on_cpu,
        cpu_share=fmt_share(p.cpu_time_share),
        ops=op_text,
        verdict=verdict,
        failed=failed,
    )


def _latency(entries: Sequence[Entry]) -> LatencyTable:
    sizes = sorted({s.batch_size for e in entries if e.result for s in e.result.latency})
    rows = []
    for e in entries:
        if not e.result or not e.result.latency:
            continue
        by_size = {s.batch_size: s for s in e.result.latency}
        cells = tuple(
            f"{fmt_ms(by_size[b].p50_ms)} / {fmt_ms(by_size[b].p90_ms)}" if b in by_size else "—"
            for b in sizes
        )
        check = e.result.check("latency")
        rows.append(LatencyRow(e.target.id, cells, bool(check and check.status.blocks)))
    return LatencyTable(tuple(sizes), tuple(rows))


def _figures(figures: dict[str, object]) -> str:
    parts = []
    for k, v in figures.items():
        shown = fmt_num(v) if isinstance(v, float) else str(v)
        parts.append(f"{k}={shown}")
    return ", ".join(parts)


def _failure(entry: Entry, config_path: str) -> Failure:
    r = entry.result
    checks: tuple[FailedCheck, ...] = ()
    if r is not None:
        checks = tuple(
            FailedCheck(c.name, c.status.value, c.message, _figures(c.figures))
            for c in r.checks
            if c.status.blocks
        )
    return Failure(
        target=entry.target.id,
        icon=ICON[entry.outcome],
        outcome=entry.outcome.value,
        reason=entry.reason or "(no reason recorded)",
        checks=checks,
        reproduce=default_reproduce(entry, config_path)
        if config_path or not (r and r.reproduce)
        else r.reproduce,
    )


def _counts(entries: Sequence[Entry]) -> Counts:
    c = Counter(e.outcome for e in entries)
    return Counts(
        total=len(entries),
        passed=c[Outcome.PASSED],
        failed=c[Outcome.FAILED],
        error=c[Outcome.ERROR],
        missing=c[Outcome.MISSING],
        expected=c[Outcome.EXPECTED],
        skipped=c[Outcome.SKIPPED],
    )


def failing_kinds(entries: Sequence[Entry]) -> list[str]:
    """The kinds of check that failed (``parity[logits]`` counts as parity), most frequent first."""
    kinds: Counter[str] = Counter()
    for e in entries:
        if e.outcome is Outcome.MISSING:
            kinds["missing"] += 1
        elif e.outcome.blocks and e.result is not None:
            names = {c.name.split("[")[0] for c in e.result.checks if c.status.blocks}
            kinds.update(names or {e.outcome.value})
    return [k for k, _ in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))]


def headline(counts: Counts, problems: int, junit_failed: int, kinds: Sequence[str] = ()) -> str:
    if counts.judged == 0 and not problems:
        return "no targets reported"
    if counts.blocking:
        text = f"{counts.blocking} of {counts.judged} targets failed"
        if kinds:
            text += f" ({', '.join(kinds)})"
    else:
        text = (
            f"all {counts.passed} targets passed"
            if counts.passed == counts.judged
            else (f"{counts.passed} of {counts.judged} targets passed, none failed")
        )
    if problems:
        text += f"; {problems} problem(s) reading the results"
    if junit_failed:
        text += f"; {junit_failed} other test(s) failed"
    return text


def build(
    collection: Collection,
    *,
    commit: Commit | None = None,
    run_url: str = "",
    junit: JUnitSummary | None = None,
    title: str = "onnx-gate",
    report_file: str = "report.md",
) -> ReportView:
    entries = collection.entries
    counts = _counts(entries)
    junit_failed = junit.failed + junit.errors if junit else 0
    blocks = bool(counts.blocking or collection.problems or junit_failed or counts.judged == 0)
    judged = [e for e in entries if e.result is not None and e.outcome not in (Outcome.EXPECTED,)]
    fallback = tuple(row for e in judged if e.result and (row := _fallback_row(e, e.result)))
    return ReportView(
        title=title,
        headline=headline(counts, len(collection.problems), junit_failed, failing_kinds(entries)),
        blocks=blocks,
        counts=counts,
        commit=commit or Commit(),
        run_url=run_url,
        failures=tuple(_failure(e, collection.config_path) for e in entries if e.outcome.blocks),
        problems=collection.problems,
        parity=tuple(_parity_row(e, e.result) for e in judged if e.result and e.result.parity),
        fallback=fallback,
        latency=_latency(judged),
        skips=tuple(
            Skip(e.target.id, e.reason) for e in entries if e.outcome in (Outcome.EXPECTED, Outcome.SKIPPED)
        ),
        junit=junit,
        report_file=report_file,
    )
