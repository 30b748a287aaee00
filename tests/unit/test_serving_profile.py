"""The serving profile in config, budgets and report: verify.sweeps and model.dim_max read and checked,
budgets.min_throughput judged with its margin, the profile's rows and knees, and the charts (Mermaid
blocks held to the xychart grammar, SVG files that parse as XML)."""

from __future__ import annotations

import dataclasses
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from ci_onnx import config
from ci_onnx.contracts.errors import ConfigError
from ci_onnx.contracts.results import (
    RESULT_SCHEMA_VERSION,
    SCHEMA_VERSION,
    Environment,
    LatencyStat,
    Observation,
    TargetResult,
)
from ci_onnx.contracts.target import Status, Target
from ci_onnx.contracts.verify_options import Budgets
from ci_onnx.report import charts, profile, render
from ci_onnx.report.collect import Entry
from ci_onnx.verify import budgets

SEQ_MODEL = """\
version: 1
model:
  factory: model.py:build
  inputs: {x: {shape: [batch, seq, 8]}}
  outputs: [y]
  dynamic_axes: {x: {0: batch, 1: seq}, y: {0: batch, 1: seq}}
  dim_sizes: {seq: 8}
"""


def load(tmp_path: Path, extra: str) -> config.Config:
    path = tmp_path / "onnx-gate.yml"
    path.write_text(SEQ_MODEL + extra)
    return config.load(path)


def test_sweeps_dim_max_and_written_batch_sizes_are_read(tmp_path: Path) -> None:
    cfg = load(
        tmp_path, "  dim_max: {seq: 512}\nverify: {sweeps: {seq: [1, 7, 64, 512]}, batch_sizes: [1, 8]}\n"
    )
    assert cfg.verify.sweeps == {"seq": (1, 7, 64, 512)} and cfg.model.dim_max == {"seq": 512}
    assert cfg.verify.batch_sizes_declared
    from ci_onnx.verify.stage import options_from

    assert options_from(cfg).declared_batch_sizes == (1, 8)
    default = load(tmp_path, "")
    assert not default.verify.batch_sizes_declared and default.verify.batch_sizes == (1, 8)
    assert options_from(default).declared_batch_sizes == ()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("verify: {sweeps: {sq: [1, 2]}}\n", "verify.sweeps.sq: 'sq' is no dynamic dim of an input (model.dynamic_axes); did you mean 'seq'?"),
        ("verify: {sweeps: {batch: [1, 2]}}\n", "verify.sweeps.batch: 'batch' is the batch axis (verify.batch_sizes sweeps it)"),
        ("  dim_max: {seq: 32}\nverify: {sweeps: {seq: [8, 64]}}\n", "verify.sweeps.seq: 64 is past model.dim_max.seq (32)"),
        ("verify: {sweeps: {seq: [0]}}\n", "verify.sweeps.seq.0: 0 is less than the minimum of 1"),
    ],
)  # fmt: skip
def test_a_sweep_that_cannot_be_is_one_line_naming_the_key(tmp_path: Path, extra: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load(tmp_path, extra)
    assert message in str(info.value) and str(info.value).startswith(str(tmp_path / "onnx-gate.yml") + ":")


def stat(n: int, p50: float, point: str = "", runs: int = 20) -> LatencyStat:
    samples = tuple(p50 * (1 + i / 100) for i in range(runs))
    return LatencyStat(
        n, p50, p50 * 1.1, p50 * 1.2, runs, samples, point=point, first_ms=p50 * 3, peak_rss_mb=64.0
    )


def observation(latency: tuple[LatencyStat, ...], sweep: tuple[LatencyStat, ...] = ()) -> Observation:
    env = Environment("1.32.0", ("CPUExecutionProvider",), ("CPUExecutionProvider",), "linux")
    return Observation(SCHEMA_VERSION, "t", env, latency=latency, sweep_latency=sweep)


def test_min_throughput_fails_with_the_figure_and_the_margin() -> None:
    obs = observation((stat(1, 0.5), stat(8, 2.0)), (stat(2, 1.0, "seq=64"),))
    b = Budgets.from_config({"min_throughput": {"8": 5000, "seq=64": 1000, "32": 10}})
    c = budgets.checks(obs, b)[-1]
    assert c.name == "budget[min_throughput]" and c.status is Status.FAILED
    # batch 8 at 2 ms serves 4000 items/s: 1000 (20 %) under 5000; seq=64: 2000 items/s is within
    assert "batch 8: 4000 items/s is 1000 items/s (20%) under 5000 items/s" in c.message
    assert "seq=64" not in c.message.split("(budgets.min_throughput)")[0]
    assert c.message.endswith("; batch 32 not timed")
    ok = budgets.checks(obs, Budgets.from_config({"min_throughput": 100}))[-1]
    assert ok.status is Status.PASSED and "seq=64: 2000 ≥ 100 items/s" in ok.message
    none = budgets.checks(observation(()), Budgets.from_config({"min_throughput": 100}))[-1]
    assert none.status is Status.SKIPPED


def entry(target_id: str, latency: tuple[LatencyStat, ...], sweep: tuple[LatencyStat, ...] = ()) -> Entry:
    t = Target.from_id(target_id)
    obs = Observation(SCHEMA_VERSION, t.id, None, latency=latency, sweep_latency=sweep)
    r = TargetResult(RESULT_SCHEMA_VERSION, t, Status.PASSED, "", observation=obs)
    return Entry(t, Status.PASSED, r)


def test_the_profile_names_its_tail_for_the_runs_behind_it_and_finds_the_knee() -> None:
    e = entry(
        "ort1.32.0-cpu-op17-dynamo", (stat(1, 0.1), stat(8, 0.2), stat(32, 0.78)), (stat(2, 0.3, "seq=7"),)
    )
    rows = profile.rows([e])
    assert [r.point for r in rows] == ["batch 1", "batch 8", "batch 32", "seq=7 (2 per run)"]
    assert rows[0].tail == "0.119 (max of 20)" and rows[1].throughput == "40,000"
    assert rows[0].first == "0.3 vs 0.1 (3.0×)"
    long = dataclasses.replace(stat(1, 0.1, runs=100))
    assert profile.tail_text(long).endswith("(p99)")
    # 10 000 → 40 000 (+300 %) → 41 026 (+3 %): it stops growing at batch 8
    assert profile.knees([e]) == (
        "`ort1.32.0-cpu-op17-dynamo`: throughput stops growing at batch 8 (40,000 items/s; batch 32: "
        "41,026, +2.6%)",
    )


XY = re.compile(
    r"\A---\nconfig:\n  themeVariables:\n    xyChart:\n      plotColorPalette: \"(#[0-9a-f]{6})(, #[0-9a-f]{6})*\"\n---\n"
    r"xychart-beta\n  title \"[^\"\n]+\"\n  x-axis \"[^\"\n]+\" \[\"[^\"\n]+\"(, \"[^\"\n]+\")+\]\n"
    r"  y-axis \"[^\"\n]+\"\n(  line \[-?[0-9.]+(, -?[0-9.]+)*\]\n?)+\Z"
)
"""The subset of Mermaid's xychart grammar the report writes (the e2e tier parses it with Mermaid)."""


def test_charts_draw_every_target_with_every_point_and_leave_out_one_point_charts(tmp_path: Path) -> None:
    full = (stat(1, 0.1), stat(8, 0.2), stat(32, 0.78))
    entries = [
        entry("ort1.32.0-cpu-op17-dynamo", full, (stat(2, 0.3, "seq=7"), stat(2, 0.5, "seq=64"))),
        entry("ort1.20.1-cpu-op17-dynamo", full[:2]),  # batch 32 missing: not drawn on that axis
        *(entry(f"ort1.2{i}.0-cpu-op18-dynamo", full) for i in range(8)),
    ]
    made = charts.charts(entries)
    names = [c.svg_file for c in made]
    assert names == [
        "chart-latency-by-batch-1.svg", "chart-latency-by-batch-2.svg",
        "chart-throughput-by-batch-1.svg", "chart-throughput-by-batch-2.svg",
        "chart-latency-by-seq.svg", "chart-throughput-by-seq.svg",
    ]  # fmt: skip
    first = made[0]
    assert len(first.series) == charts.MAX_LINES and first.left_out == ("ort1.20.1-cpu-op17-dynamo",)
    assert first.x == (1, 8, 32) and first.series[0].values == (0.1, 0.2, 0.78)
    assert made[2].series[0].values == (10000.0, 40000.0, 41030.0)
    for c in made:
        assert XY.match(c.mermaid + "\n"), c.mermaid
        assert c.mermaid.count("  line [") == len(c.series) == len(c.legend)
    assert made[4].legend_line == "🟦 `ort1.32.0-cpu-op17-dynamo`"
    one_point = charts.charts([entry("ort1.32.0-cpu-op17-dynamo", (stat(1, 0.1),))])
    assert one_point == ()  # one point would make a chart: none
    written = charts.write_svgs(tmp_path, made)
    for path in written:
        root = ET.parse(path).getroot()
        assert root.tag == "{http://www.w3.org/2000/svg}svg"
        lines = root.findall("{http://www.w3.org/2000/svg}polyline")
        assert len(lines) == len(next(c for c in made if c.svg_file == path.name).series)
    (tmp_path / "chart-stale.svg").write_text("<svg/>")
    charts.write_svgs(tmp_path, made[:1])
    assert sorted(p.name for p in tmp_path.glob("chart-*.svg")) == ["chart-latency-by-batch-1.svg"]


def test_the_report_shows_the_profile_and_charts_and_folds_them_in_turn() -> None:
    from ci_onnx.report import gate, view
    from ci_onnx.report.collect import Collection

    full = (stat(1, 0.1), stat(8, 0.2))
    entries = tuple(
        entry(f"ort1.2{i}.0-cpu-op18-dynamo", full, (stat(2, 0.3, "seq=7"), stat(2, 0.4, "seq=9")))
        for i in range(9)
    )
    collection = Collection(entries)
    v = view.build(collection, gate.decide(collection, None, None))
    text = render.render(v)
    assert "### Latency and throughput per batch size and sweep point" in text
    assert text.count("```mermaid") == 8  # latency, throughput × batch, seq × 2 groups of targets
    assert "| `ort1.20.0-cpu-op18-dynamo` | seq=7 (2 per run) |" in text
    folded = render.render(v, fold=1)
    assert (
        folded.count("```mermaid") == 4 and "4 more chart(s), of more targets, in report.md; all 8" in folded
    )
    assert "| `ort1.20.0-cpu-op18-dynamo` | seq=7" in folded
    assert "| `ort1.20.0-cpu-op18-dynamo` | seq=7" not in render.render(v, fold=2)
    assert "```mermaid" not in render.render(v, fold=3)
