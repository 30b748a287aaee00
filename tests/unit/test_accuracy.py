"""Labelled samples and the accuracy budget, without a runtime."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ci_onnx import config
from ci_onnx.contracts.errors import ConfigError
from ci_onnx.contracts.labels import load_labels
from ci_onnx.contracts.target import Status
from ci_onnx.export import inputs
from ci_onnx.verify import accuracy
from tests.conftest import EXAMPLE_CONFIG
from tests.support.results import observed


def test_the_example_samples_are_labelled_held_out_digits() -> None:
    cfg = config.load(EXAMPLE_CONFIG)
    samples = inputs.load_samples(cfg.resolve(cfg.model.samples), cfg.model.inputs)
    labels = inputs.labels_of(cfg, samples)
    assert set(labels) == {"logits"}  # `labels` → the decision output
    assert len(labels["logits"]) == len(samples["image"]) >= 200
    assert set(np.unique(labels["logits"])) == set(range(10))  # every class, not a sorted slice


@pytest.mark.parametrize(
    ("arrays", "decision", "words"),
    [
        ({"labels": np.zeros(4, np.int64)}, "logits", None),
        ({"label:logits": np.zeros(4, np.int64)}, None, None),
        ({"label:probs": np.zeros(4, np.int64)}, None, ["label:probs", "not a declared output"]),
        ({"labels": np.zeros(4, np.float32)}, "logits", ["'labels'", "float32", "int64"]),
        ({"labels": np.zeros(3, np.int64)}, "logits", ["'labels'", "[3]", "(4)"]),
        ({"labels": -np.ones(4, np.int64)}, "logits", ["negative"]),
        ({"labels": np.zeros(4, np.int64), "label:logits": np.zeros(4, np.int64)}, "logits", ["twice"]),
    ],
)
def test_the_labels_convention_and_its_one_line_errors(
    tmp_path: Path, arrays: dict[str, np.ndarray], decision: str | None, words: list[str] | None
) -> None:
    path = tmp_path / "s.npz"
    np.savez(path, image=np.zeros((4, 1, 8, 8), np.float32), **arrays)  # type: ignore[arg-type]
    if words is None:
        assert list(load_labels(path, ["logits"], decision, 4)) == ["logits"]
        return
    with pytest.raises(ConfigError) as err:
        load_labels(path, ["logits"], decision, 4, key="onnx-gate.yml: model.samples")
    message = str(err.value)
    assert "\n" not in message and "model.samples" in message and all(w in message for w in words), message


def test_plain_labels_need_a_decision_when_the_model_has_several_outputs(tmp_path: Path) -> None:
    path = tmp_path / "s.npz"
    np.savez(path, x=np.zeros((2, 3)), labels=np.zeros(2, np.int64))
    assert load_labels(path, ["a"], None, 2).keys() == {"a"}
    with pytest.raises(ConfigError, match="label:<output>"):
        load_labels(path, ["a", "b"], None, 2)
    assert load_labels(tmp_path / "s.npz", ["a", "b"], "b", 2).keys() == {"b"}


def test_unlabelled_samples_keep_no_accuracy(tmp_path: Path) -> None:
    path = tmp_path / "s.npz"
    np.savez(path, image=np.zeros((4, 1, 8, 8), np.float32))
    assert load_labels(path, ["logits"], "logits", 4) == {}


def test_top1_is_the_argmax_against_the_labels() -> None:
    scores = np.array([[0.1, 0.9], [0.8, 0.2], [np.nan, 1.0]])
    assert accuracy.top1(scores, np.array([1, 1, 1])) == (2, 3)
    with pytest.raises(ValueError, match="do not fit"):
        accuracy.top1(scores, np.array([1, 1]))


def test_the_budget_passes_within_and_fails_beyond_saying_by_how_much() -> None:
    ok = accuracy.verdict("accuracy", "logits", 290, 292, 297, 1.0)
    assert ok.status == Status.PASSED and "0.67 points lost" in ok.message
    assert ok.figures["pytorch_accuracy"] == pytest.approx(100 * 292 / 297, abs=1e-3)
    bad = accuracy.verdict("accuracy", "logits", 280, 292, 297, 1.0)
    assert bad.status == Status.FAILED
    assert "4.04 points lost, 3.04 more than budgets.accuracy_drop (1)" in bad.message, bad.message
    assert bad.figures["drop_points"] == pytest.approx(100 * 12 / 297, abs=1e-3)
    better = accuracy.verdict("accuracy", "logits", 293, 292, 297, 0.0)
    assert better.status == Status.PASSED and "gained" in better.message
    assert accuracy.verdict("accuracy", "logits", 291, 292, 297, 0.0).status == Status.FAILED


def test_the_budget_is_a_config_key_with_a_schema_default(tmp_path: Path) -> None:
    default = config.schema()["properties"]["budgets"]["properties"]["accuracy_drop"]["default"]
    assert config.load(EXAMPLE_CONFIG).accuracy_drop == default
    path = tmp_path / "onnx-gate.yml"
    text = EXAMPLE_CONFIG.read_text().replace("model.py:build", f"{EXAMPLE_CONFIG.parent}/model.py:build")
    text = text.replace("samples: samples.npz", f"samples: {EXAMPLE_CONFIG.parent}/samples.npz")
    assert "  accuracy_drop: 1.0 " in text  # the example declares it
    path.write_text(text.replace("  accuracy_drop: 1.0 ", "  accuracy_drop: 2.5 "))
    assert config.load(path).accuracy_drop == 2.5
    path.write_text(text.replace("  accuracy_drop: 1.0 ", "  accuracy_drop: 101 "))
    with pytest.raises(ConfigError, match=r"budgets\.accuracy_drop"):
        config.load(path)


def test_the_report_sets_each_precision_beside_its_fp32_cell() -> None:
    import dataclasses
    import random

    from ci_onnx.contracts.results import CheckResult, LatencyStat
    from ci_onnx.contracts.target import Target
    from ci_onnx.report.collect import Entry
    from ci_onnx.report.precisions import rows
    from tests.golden.scenarios import result_for

    def entry(precision: str, size: int, p50: float, correct: int) -> Entry:
        t = Target("1.32.0", "cpu", 17, "dynamo", precision)
        r = result_for(t, random.Random(0))
        extra = (
            CheckResult("export", Status.PASSED, "", {"model_bytes": size}),
            accuracy.verdict("accuracy", "logits", correct, 290, 297, 1.0),
        )
        r = observed(
            dataclasses.replace(r, checks=r.checks + extra), latency=(LatencyStat(8, p50, p50, p50, 5),)
        )
        return Entry(t, Status.PASSED, r)

    alone = rows([entry("fp32", 400_000, 0.2, 290)])
    assert alone == ()  # one precision: nothing to set beside
    table = {
        r.precision: r
        for r in rows([entry("fp32", 400_000, 0.2, 290), entry("int8-static", 100_000, 0.1, 281)])
    }
    static = table["int8-static"]
    assert static.size == "0.10 MB (0.25× fp32)" and static.latency == "0.1 ms at batch 8 (0.50× fp32)"
    assert static.accuracy == f"{100 * 281 / 297:.2f} %"
    assert static.vs_fp32 == static.vs_pytorch == f"−{100 * 9 / 297:.2f} pts"
    assert table["fp32"].vs_pytorch == "+0.00 pts"
