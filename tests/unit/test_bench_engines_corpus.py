"""bench/bench_engines_corpus.py's pure parts: the corpus configs it runs, how a cell reads, and its
section of bench/ENGINES.md, which bench/bench_engines.py's rewrite of the file keeps."""

from __future__ import annotations

from pathlib import Path

from bench import bench_engines_corpus as corpus
from ci_onnx import config
from tests.corpus import real_models


def test_each_corpus_model_runs_at_opset_18_both_exporters_on_the_two_engines(tmp_path: Path) -> None:
    entry = next(e for e in real_models.CORPUS if e.name == "tinycnn")
    path = tmp_path / "onnx-gate.yml"
    path.write_text(corpus.config(entry))
    cfg = config.load(path)
    assert list(cfg.export.opsets) == [18] and list(cfg.export.exporters) == ["dynamo", "torchscript"]
    assert list(cfg.targets.runners) == ["openvino", "tract"]


def test_a_cell_reads_as_pass_or_its_failed_checks_and_the_first_ones_words() -> None:
    passed = {"status": "passed", "checks": [{"name": "load", "status": "passed", "message": ""}]}
    assert corpus.verdict(passed) == "pass"
    failed = {
        "status": "failed",
        "checks": [
            {"name": "parity[y]", "status": "failed", "message": "3 of 8 out | of tolerance\nmore"},
            {"name": "sweep[seq=1]", "status": "failed", "message": ""},
            {"name": "sweep[seq=7]", "status": "failed", "message": ""},
            {"name": "engine-precision", "status": "failed", "message": ""},
        ],
    }
    assert corpus.verdict(failed) == "FAIL parity[y], sweep ×2, engine-precision: 3 of 8 out \\| of tolerance"
    assert corpus.fault("x", "dynamo", "openvino default", ("parity", "engine-precision")) == corpus.BF16
    assert corpus.fault("x", "dynamo", "tract", ("dynamic-axes",)) == corpus.EXPORT


def test_its_section_is_replaced_in_place_and_kept_by_the_other_benchs_rewrite() -> None:
    text = f"# E\n\n## A\n\na\n\n{corpus.SECTION}\n\nold\n\n## B\n\nb\n"
    new = corpus.replace_section(text, [corpus.SECTION, "", "new"])
    assert new == f"# E\n\n## A\n\na\n\n{corpus.SECTION}\n\nnew\n\n## B\n\nb\n"
    kept = corpus.section_of(new)
    assert kept == f"{corpus.SECTION}\n\nnew\n\n"
    assert (
        corpus.replace_section("# E\n\n## A\n", kept.splitlines())
        == f"# E\n\n## A\n\n{corpus.SECTION}\n\nnew\n"
    )
