"""The regression gate of several models: the base's cells are matched by their model's id, and
each model's own expected failures cover its targets only."""

from __future__ import annotations

from pathlib import Path

from ci_onnx import plan as planning
from ci_onnx.config import cascade
from ci_onnx.contracts.results import CheckResult, TargetResult
from ci_onnx.contracts.target import Status
from ci_onnx.report import gate
from ci_onnx.report.baseline import Baseline
from ci_onnx.report.collect import merge
from ci_onnx.verify import judge
from tests.conftest import FakeIndex

INDEX = FakeIndex({"onnxruntime": ["1.32.0"]})
FACTORY = "import torch\n\n\ndef build():\n    return torch.nn.Linear(4, 2)\n"
CONFIG = """\
version: 1
export: {opsets: [17], exporters: [dynamo]}
targets: {runtimes: ["1.32.0"], providers: [cpu]}
models:
  - name: encoder
    factory: encoder/model.py:build
    inputs: {x: {shape: [batch, 4]}}
    outputs: [y]
    expected_failures:
      - {select: '*', check: 'parity*', reason: 'known drift', until: '2999-01-01'}
  - name: decoder
    factory: decoder/model.py:build
    inputs: {x: {shape: [batch, 4]}}
    outputs: [y]
"""
ENCODER = "encoder.ort1.32.0-cpu-op17-dynamo"
DECODER = "decoder.ort1.32.0-cpu-op17-dynamo"
SHA = "4f1d2c3aa0000000000000000000000000000000"


def _plan(tmp_path: Path, text: str = CONFIG) -> planning.Plan:
    for name in ("encoder", "decoder"):
        (tmp_path / name).mkdir(exist_ok=True)
        (tmp_path / name / "model.py").write_text(FACTORY)
    (tmp_path / "onnx-gate.yml").write_text(text)
    return planning.expand(cascade.load_all(tmp_path / "onnx-gate.yml"), INDEX)


def _results(plan: planning.Plan, failing: set[str]) -> dict[str, TargetResult]:
    """One result per target; those named in ``failing`` fail parity[y], the rest pass it."""
    out = {}
    for t in plan.targets:
        status = Status.FAILED if t.id in failing else Status.PASSED
        out[t.id] = judge.result(t, None, [CheckResult("parity[y]", status, "8 of 8 out")])
    return out


def test_the_base_s_cells_are_matched_by_the_model_s_id(tmp_path: Path) -> None:
    """The same cell of two models: the decoder failing where the encoder failed on the base is a
    regression of the decoder, not the encoder's known failure."""
    no_ledger = "".join(
        line for line in CONFIG.splitlines(True) if "expected_failures" not in line and "2999" not in line
    )
    plan = _plan(tmp_path, no_ledger)
    assert sorted(t.id for t in plan.targets) == [DECODER, ENCODER]
    assert plan.gate.expected_failures == ()
    base_results = _results(plan, {ENCODER})
    base = Baseline(SHA, "--baseline base", base_results, planned=tuple(t.id for t in plan.targets))
    head = merge(_results(plan, {DECODER}), plan)
    g = gate.decide(head, plan, baseline=base, mode=gate.Mode.REGRESSION, why="test")
    change = {c.target.id: c.change for c in g.cells}
    assert change == {ENCODER: gate.Change.FIXED, DECODER: gate.Change.NEWLY_FAILING}
    assert [c.target.id for c in g.blocking] == [DECODER]
    assert g.cell(DECODER).why == "newly failing against 4f1d2c3: parity[y]"  # type: ignore[union-attr]
    still = merge(_results(plan, {ENCODER}), plan)
    known = gate.decide(still, plan, baseline=base, mode=gate.Mode.REGRESSION, why="test")
    assert known.blocking == () and known.cell(ENCODER).known  # type: ignore[union-attr]


def test_a_model_s_expected_failures_cover_its_own_targets_only(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    [entry] = plan.gate.expected_failures
    assert (entry.select, entry.key) == ("encoder.*", "models.0.expected_failures[0]")
    both = merge(_results(plan, {ENCODER, DECODER}), plan)
    g = gate.decide(both, plan, mode=gate.Mode.ABSOLUTE, why="test")
    encoder, decoder = g.cell(ENCODER), g.cell(DECODER)
    assert encoder is not None and encoder.is_expected and not encoder.blocks
    assert encoder.why == "expected: known drift (until 2999-01-01)"
    assert decoder is not None and decoder.blocks and not decoder.expected
    assert [c.target.id for c in g.blocking] == [DECODER]
