"""Measure 4: aggregating 256 target results into the comment, the summary and JUnit.

The 256 results are generated (tests/golden/scenarios.py, schema-valid, one in seven failing) and
written as verify writes them. Timed: `onnx-gate report --no-publish` as a child process against
`onnx-gate --help` (the same start-up, no work), and writing the 256 JUnit files with verify's own
writer against writing the 256 result JSONs. Sizes: each rendering against GitHub's limit.
"""

from __future__ import annotations

import functools
import shutil
from collections.abc import Callable
from pathlib import Path

from bench import common, harness
from ci_onnx.contracts.results import TargetResult

N = 256
HELP, REPORT = "onnx-gate --help", f"onnx-gate report ({N} results) --no-publish"
JSON, JUNIT = f"write {N} result JSONs", f"write {N} JUnit files"


def _write_all(out: Path, results: list[TargetResult], writer: Callable[[Path, TargetResult], Path]) -> None:
    shutil.rmtree(out, ignore_errors=True)
    for r in results:
        writer(out, r)


def sizes(results_dir: Path, plan_path: Path) -> str:
    from ci_onnx.plan import read_plan
    from ci_onnx.report import gate, limits, render, view
    from ci_onnx.report.collect import collect

    the_plan = read_plan(plan_path)
    collection = collect([results_dir], the_plan)
    the_view = view.build(collection, gate.decide(collection, the_plan))
    rows = ["| rendering | size | GitHub's limit | fits | shortened to fit |", "|---|---|---|---|---|"]
    full = render.render(the_view)
    rows.append(f"| report.md (file, no limit) | {len(full):,} characters | — | — | — |")
    for name, limit in (
        ("PR comment", limits.COMMENT),
        ("check-run summary", limits.CHECK_SUMMARY),
        ("job summary", limits.JOB_SUMMARY),
    ):
        text = render.render_within(the_view, limit)
        natural = render.render(the_view, fold=render.first_fold(the_view))
        cut = "no" if text == natural else "yes (passing rows left out, or cut)"
        rows.append(
            f"| {name} | {limit.measure(text):,} {limit.unit.value} | {limit.size:,} {limit.unit.value} | "
            f"{'yes' if limit.fits(text) else '**no**'} | {cut} |"
        )
    return "\n".join(rows)


def measure(work: Path, runs: int) -> list[harness.Section]:
    from ci_onnx.contracts.results import write_result
    from ci_onnx.plan import to_json
    from ci_onnx.verify import junit
    from tests.golden import scenarios

    plan, results = scenarios.many(N)
    home = work / "report"
    results_dir = home / "results"
    _write_all(results_dir, results, write_result)
    plan_path = home / "plan.json"
    plan_path.write_text(to_json(plan))
    gate = common.onnx_gate()
    cli = harness.interleaved(
        {
            HELP: harness.Command((gate, "--help")),
            REPORT: harness.Command(
                (
                    gate,
                    "report",
                    "--results",
                    str(results_dir),
                    "--plan",
                    str(plan_path),
                    "--out",
                    str(home / "out"),
                    "--no-publish",
                ),
                ok=frozenset({0, 1}),  # one in seven targets fails, so the gate says 1
            ),
        },
        runs=runs,
    )
    writes = harness.interleaved(
        {
            JSON: functools.partial(_write_all, home / "json", results, write_result),
            JUNIT: functools.partial(_write_all, home / "junit", results, junit.write),
        },
        runs=runs,
    )
    junit_kb = common.du_mb(home / "junit") * 1024
    body = (
        harness.table(cli, HELP)
        + "\n\n"
        + harness.table(writes, JSON, extra={"JUnit on disk": f"{junit_kb:,.0f} KiB"})
        + "\n\n"
        + sizes(results_dir, plan_path)
    )
    return [harness.Section(f"4. Report: {N} target results", body)]
