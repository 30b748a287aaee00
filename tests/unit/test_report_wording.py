"""What a reader of report.md and the terminal is told, in words: the decisions onnx-gate made on
their behalf (an input bound by position), the figures a check judged (accuracy), grammar, legends,
and runtime messages without their C++ signature."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from ci_onnx.contracts import results as results_mod
from ci_onnx.contracts.bundle import read_manifest
from ci_onnx.contracts.results import CheckResult, ServingFigures
from ci_onnx.contracts.shorten import runtime_words
from ci_onnx.contracts.target import Status
from ci_onnx.export import parent, signature
from ci_onnx.report import accuracy, gate, render, view
from ci_onnx.report.collect import merge
from ci_onnx.verify import accuracy as verify_accuracy
from tests import bundles
from tests.golden import scenarios
from tests.support.results import observed


def _view(plan, results) -> view.ReportView:  # type: ignore[no-untyped-def]
    plan = dataclasses.replace(plan, targets=tuple(r.target for r in results))
    collection = merge({r.target.id: r for r in results}, plan)
    return view.build(collection, gate.decide(collection, plan))


def _report(plan, results) -> str:  # type: ignore[no-untyped-def]
    return render.render(_view(plan, results))


@pytest.mark.parametrize(
    ("passed", "failed", "headline"),
    [
        (1, 0, "the 1 target passed"),
        (3, 0, "all 3 targets passed"),
        (0, 1, "1 of 1 target failed"),
        (2, 1, "1 of 3 targets failed"),
    ],
)
def test_headline_grammar(passed: int, failed: int, headline: str) -> None:
    plan, results = scenarios.all_passing()
    broken = CheckResult("parity[logits]", Status.FAILED, "37 of 480 elements out of tolerance")
    chosen = [
        r if i < passed else dataclasses.replace(r, status=Status.FAILED, checks=(*r.checks, broken))
        for i, r in enumerate(r for r in results if r.status is Status.PASSED)
    ][: passed + failed]
    assert len(chosen) == passed + failed
    said = _view(plan, chosen).headline
    assert said == headline if not failed else said == f"{headline} (parity)"


def _with_check(result: results_mod.TargetResult, check: CheckResult) -> results_mod.TargetResult:
    return dataclasses.replace(result, checks=(*result.checks, check))


def test_report_md_shows_the_accuracy_the_check_judged() -> None:
    assert accuracy.CHECK == verify_accuracy.CHECK
    plan, results = scenarios.all_passing()
    judged = verify_accuracy.verdict("accuracy", "logits", 289, 290, 297, 1.0)
    results = [_with_check(results[0], judged), *results[1:]]
    text = _report(plan, results)
    assert "### Accuracy on the labelled samples" in text
    assert (
        f"| `{results[0].target.id}` | logits | 297 | 97.31 % (289) | 97.64 % (290) | −0.34 pts | ✅ |"
        in text
    )


def test_inputs_bound_by_position_are_shown_and_a_renamed_one_is_warned_on_terminal_and_in_the_report(
    tmp_path: Path,
) -> None:
    binding = signature.bind(lambda x, mask=None: None, ["image"])
    assert binding.by_position() == (("image", "x"),)
    figures = {"call": binding.describe(), "by_position": dict(binding.by_position())}
    lines = signature.shown(figures)
    assert lines[0] == "inputs bound as forward(x=image)"
    assert lines[1].startswith("warning: model.inputs.image is passed by position as forward's parameter 'x'")
    # *args has no name to differ from: shown, not warned
    star = signature.bind(lambda *args: None, ["ids", "mask"])
    assert signature.shown({"call": star.describe(), "by_position": dict(star.by_position())}) == [
        "inputs bound as forward(*args=ids, *args=mask)"
    ]
    same = signature.bind(lambda image: None, ["image"])
    assert same.by_position() == () and signature.shown({"call": same.describe()}) == []

    export = CheckResult("export", Status.PASSED, "exported", figures)
    manifest = dataclasses.replace(read_manifest(bundles.mlp_bundle(tmp_path / "b")), findings=(export,))
    assert parent.binding_lines(manifest) == lines  # what `export` and `run` print

    plan, results = scenarios.all_passing()
    first = results[0]
    replaced = dataclasses.replace(first, checks=(export, *first.checks))  # as copied from the bundle
    text = _report(plan, [replaced, *results[1:]])
    assert (
        f"_Inputs bound by position (model.inputs named unlike forward's parameters): "
        f"`{first.target.bundle_key}`: inputs bound as forward(x=image); ⚠️ model.inputs.image is passed"
    ) in text


def test_the_grid_has_a_legend_and_the_serving_ratios_a_reading() -> None:
    plan, results = scenarios.many(40)
    text = _report(plan, results)
    assert "| runtime |" in text and "`·` no such cell in the plan" in text
    plan, results = scenarios.all_passing()
    serving = ServingFigures(cold_start_ms=400.0, first_run_ms=50.0, warm_median_ms=1.0)
    text = _report(plan, [observed(results[0], serving=serving), *results[1:]])
    assert "50 vs 1 (50.0×)" in text
    assert "send one warm-up request before taking traffic" in text


def test_an_expected_skip_keeps_the_runtimes_sentence_not_its_cpp_signature() -> None:
    said = (
        "[ONNXRuntimeError] : 1 : FAIL : Load model from /b/model.onnx failed:/onnxruntime_src/onnxruntime/"
        "core/graph/model.cc:180 onnxruntime::Model::Model(onnx::ModelProto&&, const onnxruntime::PathString&, "
        "const onnxruntime::IOnnxRuntimeOpSchemaRegistryList*, const onnxruntime::logging::Logger&, "
        "const onnxruntime::ModelOptions&) Unsupported model IR version: 11, max supported IR version: 10\n"
    )
    assert runtime_words(said) == (
        "Load model from /b/model.onnx failed: Unsupported model IR version: 11, max supported IR version: 10"
    )
    templated = (
        "x failed:/src/onnxruntime/core/graph/model_load_utils.h:46 void onnxruntime::model_load_utils::"
        "ValidateOpsetForDomain(const std::unordered_map<std::string, int>&, bool, int) Opset 23 is under "
        "development"
    )
    assert runtime_words(templated) == "x failed: Opset 23 is under development"
    assert runtime_words("a plain message (with parentheses)") == "a plain message (with parentheses)"
