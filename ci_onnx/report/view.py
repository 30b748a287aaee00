"""Building the view model (ci_onnx/report/model.py) from a Collection: verdicts, counts, figures.

Templates only lay the view out. A later base-branch comparison fills ``baseline`` and each row's
``delta``; the templates already show them when present.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from ci_onnx.report import precisions, triage
from ci_onnx.report.collect import Collection, Entry
from ci_onnx.report.junit_reader import JUnitSummary
from ci_onnx.report.model import (
    Commit,
    Counts,
    FailedCheck,
    Failure,
    FallbackRow,
    LatencyRow,
    LatencyTable,
    Overview,
    ParityRow,
    ReportView,
    ServingRow,
    Skip,
)
from ci_onnx.results import SQNR_CAP_DB, TargetResult
from ci_onnx.target import Status

ICON = {
    Status.PASSED: "✅",
    Status.FAILED: "❌",
    Status.ERROR: "💥",
    Status.MISSING: "⚠️",
    Status.EXPECTED: "⏭️",
    Status.SKIPPED: "⏭️",
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


_SAFE = re.compile(r"[\w./+@:=-]+")


def _arg(text: str, fallback: str) -> str:
    """``text`` as one shell word a reviewer may paste: plain characters only (results and plans can
    come from a fork, so anything else, such as a newline that would close the code block, is dropped)."""
    return text if _SAFE.fullmatch(text) else fallback


def default_reproduce(entry: Entry, config_path: str = "") -> str:
    """A command that reproduces this one target on a laptop: with the config known (from the plan),
    `onnx-gate run` exports and verifies that cell alone; else verify on a bundle already exported.
    Built here from the target, never taken from a result file, whose text a fork could choose."""
    t = entry.target
    target = _arg(t.id, "TARGET")
    if config_path:
        return f"onnx-gate run --config {_arg(config_path, 'onnx-gate.yml')} --only '{target}'"
    return f"onnx-gate verify --bundle onnx-gate-out/bundles/{_arg(t.bundle_key, 'BUNDLE')} --target {target}"


def _parity_rows(entry: Entry, r: TargetResult) -> list[ParityRow]:
    """One row per output: its worst differences, its tolerance and how many elements fell outside."""
    d = r.decisions
    decisions_changed = bool(d and d.changed)
    rows = []
    for i, p in enumerate(r.parity):
        why = [
            w
            for w, bad in (("out of tolerance", not p.passed), ("decisions changed", decisions_changed))
            if bad
        ]
        outside = f"{p.out_of_tolerance} of {p.elements}"
        if p.shape_mismatch:
            outside = f"shape: {p.shape_mismatch}"
        rows.append(
            ParityRow(
                target=entry.target.id,
                runtime=entry.target.runtime,
                provider=entry.target.provider,
                opset=entry.target.opset,
                exporter=entry.target.exporter,
                output=p.output,
                max_abs=fmt_num(p.max_abs),
                max_rel=fmt_num(p.max_rel),
                tolerance=f"atol {p.atol:g} + rtol {p.rtol:g}",
                outside=outside,
                worst=f"{100 * p.worst_share:.0f} %" if p.worst_share is not None else "—",
                error=_error_figures(p.sqnr_db, p.cosine),
                decisions=(f"{d.changed} / {d.total}" if d else "—") if i == 0 else "",
                verdict="❌ " + ", ".join(why) if why else "✅",
                failed=bool(why),
            )
        )
    return rows


def _error_figures(sqnr_db: float | None, cosine: float | None) -> str:
    if sqnr_db is None and cosine is None:
        return "—"
    db = "—" if sqnr_db is None else ("exact" if sqnr_db >= SQNR_CAP_DB else f"{sqnr_db:.1f} dB")
    return f"{db}, {'—' if cosine is None else f'{cosine:.5f}'}"


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
        r = e.result
        rows.append(
            LatencyRow(
                e.target.id,
                cells,
                bool(check and check.status.blocks),
                session=fmt_ms(r.session_create_ms) if r.session_create_ms else "—",
                peak_rss=f"{r.peak_rss_mb:.0f}" if r.peak_rss_mb and not math.isnan(r.peak_rss_mb) else "—",
            )
        )
    return LatencyTable(tuple(sizes), tuple(rows))


def _serving(entries: Sequence[Entry]) -> tuple[ServingRow, ...]:
    rows = []
    for e in entries:
        s = e.result.serving if e.result else None
        if e.result is None or s is None:
            continue
        cold = "—"
        if s.cold_start_ms is not None:
            cold = (
                f"{fmt_ms(s.cold_start_ms)} ({fmt_ms(s.import_ms or math.nan)} / "
                f"{fmt_ms(s.session_ms or math.nan)} / {fmt_ms(s.first_run_ms or math.nan)})"
            )
        elif (c := e.result.check("cold-start")) is not None:
            cold = f"not measured: {c.message.removeprefix('not measured: ').split(';')[0]}"
        first = "—"
        if s.first_run_ms is not None and s.warm_median_ms:
            ratio = s.first_run_ms / s.warm_median_ms
            first = f"{s.first_run_ms:.3g} vs {s.warm_median_ms:.3g} ({ratio:.1f}×)"
        budget_checks = [c for c in e.result.checks if c.name.startswith("budget[")]
        budgets = "; ".join(
            f"{'❌' if c.status.blocks else '✅' if c.status.value == 'passed' else '⏭️'} {c.message}"
            for c in budget_checks
        )
        rows.append(
            ServingRow(
                e.target.id,
                cold,
                first,
                _mb(s.env_bytes),
                _mb(s.model_bytes),
                budgets or "—",
                any(c.status.blocks for c in budget_checks),
            )
        )
    return tuple(rows)


def _mb(n: int | None) -> str:
    return "—" if n is None else f"{n / (1 << 20):.1f}" if n >= 1 << 20 else f"{n / (1 << 20):.3f}"


def _reused(entries: Sequence[Entry]) -> tuple[str, ...]:
    found: dict[str, str] = {}
    for e in entries:
        check = e.result.check("export") if e.result else None
        if check is not None and check.figures.get("cache") == "reused":
            found[e.target.bundle_key] = (
                f"{e.target.bundle_key} (cache key {check.figures.get('cache_key', '?')})"
            )
    return tuple(found[k] for k in sorted(found))


def _figures(figures: dict[str, object]) -> str:
    """Figures as a person reads them: numbers formatted, lists and tables counted, never a repr."""
    parts = []
    for k, v in figures.items():
        name = k.replace("_", " ")
        if isinstance(v, bool):
            shown = "yes" if v else "no"
        elif isinstance(v, float):
            shown = fmt_num(v)
        elif isinstance(v, (int, str)):
            shown = str(v)
        elif isinstance(v, (list, tuple, dict)):
            shown = f"{len(v)}"
        else:
            continue
        parts.append(f"{name} {shown}")
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
        reproduce=default_reproduce(entry, config_path),
    )


EXPORT_FAILED = "export failed upstream: "
"""How verify summarises a target of a bundle whose export check failed (ci_onnx/verify/stage.py)."""


def _failures(entries: Sequence[Entry], config_path: str) -> tuple[Failure, ...]:
    """One failure per failing target, except that a bundle whose export failed is shown once, with
    the targets it fails, rather than once per target."""
    out: list[Failure] = []
    by_bundle: dict[str, list[Entry]] = {}
    for e in entries:
        if not e.outcome.blocks:
            continue
        if e.result is not None and e.result.summary.startswith(EXPORT_FAILED):
            if e.target.bundle_key not in by_bundle:
                out.append(_failure(e, config_path))  # placeholder, replaced below
            by_bundle.setdefault(e.target.bundle_key, []).append(e)
        else:
            out.append(_failure(e, config_path))
    for key, group in by_bundle.items():
        first = group[0]
        index = next(i for i, f in enumerate(out) if f.target == first.target.id)
        r = first.result
        assert r is not None
        export = "onnx-gate export" + (
            f" --config {_arg(config_path, 'onnx-gate.yml')}" if config_path else ""
        )
        out[index] = Failure(
            target=f"bundle {key}",
            icon=ICON[first.outcome],
            outcome="export failed",
            reason=r.summary.removeprefix(EXPORT_FAILED),
            checks=_failure(first, config_path).checks,
            reproduce=f"{export} --only '*-{_arg(key, 'BUNDLE')}'",
            affects=tuple(e.target.id for e in group),
        )
    return tuple(out)


OVERVIEW_FROM = 12
"""Plans with at least this many targets get the compact matrix at the top."""


def _overview(entries: Sequence[Entry]) -> Overview | None:
    if len(entries) < OVERVIEW_FROM:
        return None
    columns = sorted({e.target.bundle_key for e in entries}, key=lambda k: (int(k.split("-")[0][2:]), k))
    cells: dict[str, dict[str, str]] = {}
    order: list[str] = []
    for e in entries:
        t = e.target
        row = f"{t.runtime} {t.provider}"
        if row not in cells:
            order.append(row)
            cells[row] = {}
        cells[row][t.bundle_key] = ICON[e.outcome]
    return Overview(tuple(columns), tuple((r, tuple(cells[r].get(c, "·") for c in columns)) for r in order))


def _counts(entries: Sequence[Entry]) -> Counts:
    c = Counter(e.outcome for e in entries)
    return Counts(
        total=len(entries),
        passed=c[Status.PASSED],
        failed=c[Status.FAILED],
        error=c[Status.ERROR],
        missing=c[Status.MISSING],
        expected=c[Status.EXPECTED],
        skipped=c[Status.SKIPPED],
    )


def failing_kinds(entries: Sequence[Entry]) -> list[str]:
    """The kinds of check that failed (``parity[logits]`` counts as parity), most frequent first."""
    kinds: Counter[str] = Counter()
    for e in entries:
        if e.outcome is Status.MISSING:
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
    judged = [e for e in entries if e.result is not None and e.outcome not in (Status.EXPECTED,)]
    fallback = tuple(row for e in judged if e.result and (row := _fallback_row(e, e.result)))
    return ReportView(
        title=title,
        headline=headline(counts, len(collection.problems), junit_failed, failing_kinds(entries)),
        blocks=blocks,
        counts=counts,
        commit=commit or Commit(),
        run_url=run_url,
        failures=_failures(entries, collection.config_path),
        problems=collection.problems,
        parity=tuple(row for e in judged if e.result for row in _parity_rows(e, e.result)),
        fallback=fallback,
        latency=_latency(judged),
        skips=tuple(
            Skip(e.target.id, e.reason) for e in entries if e.outcome in (Status.EXPECTED, Status.SKIPPED)
        ),
        junit=junit,
        report_file=report_file,
        overview=_overview(entries),
        precisions=precisions.rows(judged),
        serving=_serving(judged),
        reused=_reused(entries),
        triage=triage.rows(entries),
    )
