"""The report's triage lines: one per triaged failing cell, its evidence and path folded beneath."""

from __future__ import annotations

import dataclasses

from ci_onnx.contracts.triage_contract import FaultClass, NodeError, Triage
from ci_onnx.report import gate, render, view
from ci_onnx.report.collect import merge
from tests.golden import scenarios

FOUND = Triage(
    1, "parity[logits]", FaultClass.RUNTIME, "node_avg_pool2d", "AveragePool",
    "runtime fault at node_avg_pool2d (AveragePool, from pool at net.py:12): onnxruntime 1.24.1 differs "
    "from onnx's reference by 0.18 while the reference matches PyTorch to 3e-08",
    evidence=("on sample 14 of test_data_set_0", "the reproduction reproduces it on its own"),
    path=(NodeError("node_relu", "Relu", "relu", 0.0, 0.0), NodeError("node_avg_pool2d", "AveragePool", "a", 0.18, 413.0)),
    compared=("the target as it ran", "onnx's ReferenceEvaluator"),
    reproduction="triage/ort1.24.1-cpu-op17-dynamo", reproduction_bytes=10363, duration_s=9.9,
)  # fmt: skip


def test_each_triaged_failing_cell_gets_one_line_with_its_evidence_folded() -> None:
    plan, results = scenarios.tinycnn()
    failing = [r for r in results if r.status.failing]
    assert len(failing) >= 2
    stopped = Triage(1, "decision", stopped="verify.triage_timeout_s (300 s) ran out", duration_s=300.0)
    triaged = {failing[0].target.id: FOUND, failing[1].target.id: stopped}
    results = [dataclasses.replace(r, triage=triaged.get(r.target.id)) for r in results]
    c = merge({r.target.id: r for r in results}, plan)
    v = view.build(c, gate.decide(c, plan))
    assert [t.target for t in v.triage] == [failing[0].target.id, failing[1].target.id]
    text = render.render(v)
    section = text[text.index("### Triage") :]
    section = section[: section.index("\n### ", 1)]  # up to the next section (the profile's list)
    lines = [ln for ln in section.splitlines() if ln.startswith("- `")]
    assert len(lines) == 2
    assert lines[0].startswith(f"- `{failing[0].target.id}`: runtime fault at node_avg_pool2d (AveragePool")
    assert "repro: `python triage/ort1.24.1-cpu-op17-dynamo/reproduce.py` (10.1 KB" in lines[0]
    assert (
        lines[1]
        == f"- `{failing[1].target.id}`: decision: triage stopped: verify.triage_timeout_s (300 s) ran out"
    )
    assert "| `node_avg_pool2d` | AveragePool | 0.18 | 413× |" in section
    assert text.count("<details>") == text.count("</details>")


def test_a_cell_that_passed_or_was_not_triaged_has_no_line() -> None:
    plan, results = scenarios.tinycnn()
    passing = next(r for r in results if not r.status.failing)
    results = [dataclasses.replace(r, triage=FOUND) if r is passing else r for r in results]
    c = merge({r.target.id: r for r in results}, plan)
    v = view.build(c, gate.decide(c, plan))
    assert v.triage == () and "### Triage" not in render.render(v)
