"""The benchmark harness's logic: interleaving, medians, ratios, tables. No wall-clock assertions."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from bench import harness


def test_cases_run_interleaved_after_the_warmup() -> None:
    order: list[str] = []
    cases = {name: (lambda n=name: order.append(n)) for name in ("a", "b", "c")}
    timings = harness.interleaved(cases, runs=2, warmup=1)
    assert order == ["a", "b", "c"] * 3
    assert {name: len(t.runs) for name, t in timings.items()} == {"a": 2, "b": 2, "c": 2}


def test_median_spread_ratio_and_above() -> None:
    t = {
        "base": harness.Timing("base", (1.0, 3.0, 2.0, 2.0, 2.0)),
        "slow": harness.Timing("slow", (5.0, 4.0, 3.0, 100.0)),
    }
    assert t["base"].median == 2.0
    assert t["slow"].median == 4.5  # the outlier moves the median by half a step, not by 100
    assert harness.ratio(t, "slow", "base") == pytest.approx(2.25)
    assert harness.above(t, "slow", "base") == pytest.approx(2.5)
    assert harness.Timing("x", (1.0, 1.0, 1.0)).spread == 0.0  # too few runs to say


def test_table_rows_follow_names_and_mark_the_baseline() -> None:
    t = {
        "bare": harness.Timing("bare", (0.5, 0.5, 0.5, 0.5)),
        "gate": harness.Timing("gate", (0.6, 0.6, 0.6, 0.6)),
        "other": harness.Timing("other", (9.0,)),
    }
    text = harness.table(t, "bare", names=["gate", "bare"], extra={"size": "3 MiB"})
    lines = text.splitlines()
    assert lines[2].startswith("| gate | 600 ms | 1.20× | +100 ms | 4 | ±0% |")
    assert lines[3].startswith("| bare (baseline) | 500 ms | 1.00× |  |")
    assert "other" not in text
    assert lines[4] == "| size | 3 MiB | | | | |"
    assert "| — |" in harness.table(t, "other", names=["other"])


def test_a_command_that_fails_is_an_error_not_a_time() -> None:
    fail = harness.Command((sys.executable, "-c", "import sys; sys.stderr.write('boom'); sys.exit(3)"))
    with pytest.raises(harness.CaseFailed, match="exited 3: boom"):
        harness.interleaved({"x": fail}, runs=1, warmup=0)
    allowed = harness.Command(fail.argv, ok=frozenset({3}))
    assert len(harness.interleaved({"x": allowed}, runs=1, warmup=0)["x"].runs) == 1


def test_a_command_sees_its_own_environment() -> None:
    probe = (sys.executable, "-c", "import os, sys; sys.exit(0 if os.environ['BENCH_PROBE'] == 'yes' else 4)")
    harness.interleaved({"x": harness.Command(probe, env={"BENCH_PROBE": "yes"})}, runs=1, warmup=0)
    with pytest.raises(harness.CaseFailed, match="exited 4"):
        harness.interleaved({"x": harness.Command(probe, env={"BENCH_PROBE": "no"})}, runs=1, warmup=0)


def test_verdict_and_section() -> None:
    assert harness.verdict(True, "1.1×", "≤ 1.2×") == "**met**: 1.1× (target: ≤ 1.2×)"
    assert harness.verdict(False, "1.4×", "≤ 1.2×").startswith("**missed**")
    assert harness.Section("T", "body\n").markdown() == "## T\n\nbody\n"


def test_bare_script_compares_as_verify_does() -> None:
    pytest.importorskip("onnxruntime")
    from bench.bare_verify import compare

    ref = np.array([1.0, 100.0, 0.0], dtype=np.float32)
    # atol 1e-4 + rtol 1e-3·|ref|: 0.05 off 100 is inside (limit 0.1001), 2e-4 off 0 is outside
    got = np.array([1.0, 100.05, 2e-4], dtype=np.float32)
    bad, max_abs, _ = compare(got, ref, 1e-4, 1e-3)
    assert bad == 1
    assert max_abs == pytest.approx(0.05, rel=1e-3)
    assert compare(np.array([np.nan]), np.array([1.0]), 1e-4, 1e-3)[0] == 1


def test_breakdown_skips_the_warmup_and_leaves_the_rest_to_the_interpreter(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    from bench.bench_verify import breakdown

    phases = tmp_path / "phases.jsonl"
    lines = [
        {"imports": 9.0, "parity": 9.0},
        {"imports": 0.2, "parity": 0.1},
        {"imports": 0.4, "parity": 0.3},
    ]
    phases.write_text("".join(json.dumps(x) + "\n" for x in lines))
    rows = breakdown(phases, 1.0, warmup=1).splitlines()
    assert rows[2].startswith("| interpreter start and exit |") and "| 500 ms | 50% |" in rows[2]
    assert "| 300 ms | 30% |" in rows[3] and "| 200 ms | 20% |" in rows[4]


def test_the_readme_gets_the_latest_results_between_its_markers() -> None:
    from bench.run_all import END, START, splice

    readme = f"# Benchmarks\n\nintro\n\n{START}\nold table\n{END}\n\nafter\n"
    new = splice(readme, "\nnew table\n")
    assert new == f"# Benchmarks\n\nintro\n\n{START}\nnew table\n{END}\n\nafter\n"
    assert splice(new, "newer") == new.replace("new table", "newer")
    with pytest.raises(ValueError, match="results:start"):
        splice("no markers", "x")
