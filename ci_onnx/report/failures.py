"""The failures of the report, as the gate judged them: those that block, then the known and the
expected ones (listed, collapsed); a bundle whose export failed is shown once, with its targets."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ci_onnx.contracts import docs_links
from ci_onnx.contracts.target import Status
from ci_onnx.report.collect import Entry
from ci_onnx.report.gate import ABSOLUTE_WHY, Cell, Gate
from ci_onnx.report.model import FailedCheck, Failure

ICON = {
    Status.PASSED: "✅",
    Status.FAILED: "❌",
    Status.ERROR: "💥",
    Status.MISSING: "⚠️",
    Status.EXPECTED: "⏭️",
    Status.SKIPPED: "⏭️",
}

_SAFE = re.compile(r"[\w./+@:=-]+")


def arg(text: str, fallback: str) -> str:
    """``text`` as one shell word a reviewer may paste: plain characters only (results and plans can
    come from a fork, so anything else, such as a newline that would close the code block, is dropped)."""
    return text if _SAFE.fullmatch(text) else fallback


def default_reproduce(entry: Entry, config_path: str = "") -> str:
    """A command that reproduces this one target on a laptop: with the config known (from the plan),
    `onnx-gate run` exports and verifies that cell alone; else verify on a bundle already exported.
    Built here from the target, never taken from a result file, whose text a fork could choose."""
    t = entry.target
    target = arg(t.id, "TARGET")
    if config_path:
        return f"onnx-gate run --config {arg(config_path, 'onnx-gate.yml')} --only '{target}'"
    return f"onnx-gate verify --bundle onnx-gate-out/bundles/{arg(t.bundle_key, 'BUNDLE')} --target {target}"


def figures_text(figures: dict[str, Any]) -> str:
    """Figures as a person reads them: numbers formatted, lists and tables counted, never a repr."""
    from ci_onnx.report.figures import fmt_num

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


def _failure(entry: Entry, cell: Cell, config_path: str, docs_url: str) -> Failure:
    r = entry.result
    checks: tuple[FailedCheck, ...] = ()
    if r is not None:
        checks = tuple(
            FailedCheck(
                c.name,
                c.status.value,
                c.message,
                figures_text(c.figures),
                docs_links.page_url(c.name, docs_url),
            )
            for c in r.checks
            if c.status.failing
        )
    first = checks[0].url if checks else ""
    return Failure(
        target=entry.target.id,
        icon=ICON[entry.outcome],
        outcome=entry.outcome.value,
        reason=entry.reason or "(no reason recorded)",
        checks=checks,
        reproduce=default_reproduce(entry, config_path),
        standing=_standing(cell),
        url=first or (docs_links.page_url("missing", docs_url) if entry.outcome == Status.MISSING else ""),
    )


def _standing(cell: Cell) -> str:
    """The gate's word, where it says more than the mode does."""
    return "" if cell.why == ABSOLUTE_WHY else cell.why


def _bundle_failure(group: Sequence[tuple[Entry, Cell]], config_path: str, docs_url: str) -> Failure:
    first, cell = group[0]
    r = first.result
    assert r is not None
    key = first.target.bundle_key
    export = "onnx-gate export" + (f" --config {arg(config_path, 'onnx-gate.yml')}" if config_path else "")
    return Failure(
        target=f"bundle {key}",
        icon=ICON[first.outcome],
        outcome="export failed",
        reason=r.summary.removeprefix("export failed upstream: "),
        checks=(shown := _failure(first, cell, config_path, docs_url)).checks,
        reproduce=f"{export} --only '*-{arg(key, 'BUNDLE')}'",
        affects=tuple(e.target.id for e, _ in group),
        standing=_standing(cell),
        url=shown.url,
    )


def failures(
    entries: Sequence[Entry], gate: Gate, config_path: str, *, blocking: bool
) -> tuple[Failure, ...]:
    """One failure per failing target the gate says blocks (``blocking``) or does not, except that a
    bundle whose export failed is shown once, with the targets it fails."""
    out: list[Failure | list[tuple[Entry, Cell]]] = []
    by_bundle: dict[str, list[tuple[Entry, Cell]]] = {}
    for e in entries:
        cell = gate.cell(e.target.id)
        if cell is None or not cell.is_failure or cell.blocks != blocking:
            continue
        if e.result is not None and e.result.export_failed:
            if e.target.bundle_key not in by_bundle:
                by_bundle[e.target.bundle_key] = []
                out.append(by_bundle[e.target.bundle_key])
            by_bundle[e.target.bundle_key].append((e, cell))
        else:
            out.append(_failure(e, cell, config_path, gate.settings.docs_url))
    return tuple(
        f if isinstance(f, Failure) else _bundle_failure(f, config_path, gate.settings.docs_url) for f in out
    )
