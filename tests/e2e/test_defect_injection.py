"""The defect-injection suite, a representative subset: each broken mutant fails the check that names
its defect, the unmutated model passes, and a mutant the export gets right anyway passes with a
warning. The whole table is `PYTHONPATH=. python tests/injection/suite.py` (tests/injection/INJECTION.md).
"""

from __future__ import annotations

import pytest

from tests.injection import suite

pytestmark = pytest.mark.e2e

SUBSET = {
    # DigitNet (real weights): every mutation that applies, by TorchScript; the baseline by both
    ("tinycnn", "none"): ("torchscript", "dynamo"),
    ("tinycnn", "inplace"): ("torchscript", "dynamo"),
    ("tinycnn", "loop_0"): ("torchscript",),
    ("tinycnn", "baked_0"): ("torchscript", "dynamo"),
    ("tinycnn", "random"): ("torchscript",),
    ("tinycnn", "fp16"): ("torchscript",),
    # state kept between calls: a counter in a buffer by both exporters, a cached Python attribute
    ("tinycnn", "counter"): ("torchscript", "dynamo"),
    ("tinycnn", "cache"): ("torchscript",),
    # named outputs (a dict of three): reordered
    ("multi_rank", "reorder"): ("torchscript",),
    # the batch off axis 0 (a seq-first GRU with h0: axis 1) and on two axes ([batch, batch]): healthy,
    # so they pass; a running statistic in the GRU's forward still fails stateful
    ("gru_h0", "none"): ("torchscript",),
    ("gru_h0", "running"): ("torchscript",),
    ("similarity", "none"): ("torchscript",),
}


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str, str, str], suite.Row]:
    mp = pytest.MonkeyPatch()
    mp.setenv("HF_HUB_OFFLINE", "1")
    work = tmp_path_factory.mktemp("injection")
    out: dict[tuple[str, str, str, str], suite.Row] = {}
    try:
        for (name, mutation), exporters in SUBSET.items():
            model = next(m for m in suite.MODELS if m.name == name)
            for row in suite.run_case(model, mutation, work, exporters):
                out[(row.model, row.mutation, row.exporter, row.precision)] = row
    finally:
        mp.undo()
    return out


def _cases() -> list[tuple[str, str, str]]:
    return [(m, mu, e) for (m, mu), exporters in SUBSET.items() for e in exporters]


@pytest.mark.parametrize(("model", "mutation", "exporter"), _cases())
def test_each_broken_mutant_fails_its_check_and_each_healthy_cell_passes(
    rows: dict[tuple[str, str, str, str], suite.Row], model: str, mutation: str, exporter: str
) -> None:
    cells = [r for k, r in rows.items() if k[:3] == (model, mutation, exporter)]
    assert cells
    for r in cells:
        assert r.outcome in ("killed", "pass"), f"{r.outcome}: truth {r.truth}, gate {r.failed}: {r.message}"
        if mutation != "none" and r.precision == "fp32" and mutation != "fp16":
            assert r.truth.broken or mutation == "inplace", f"the mutation did nothing: {r}"


def test_the_unmutated_model_is_healthy_and_passes(rows: dict[tuple[str, str, str, str], suite.Row]) -> None:
    baseline = [r for r in rows.values() if r.mutation == "none"]
    assert baseline and all(not r.truth.broken and r.verdict == "pass" for r in baseline)


def test_an_in_place_edit_the_export_keeps_passes_with_a_warning(
    rows: dict[tuple[str, str, str, str], suite.Row],
) -> None:
    dynamo = rows[("tinycnn", "inplace", "dynamo", "fp32")]
    assert not dynamo.truth.broken and dynamo.verdict == "pass"
    assert any("changes input(s) 'image' in place" in w for w in dynamo.warnings)
    torchscript = rows[("tinycnn", "inplace", "torchscript", "fp32")]
    assert torchscript.truth.broken and torchscript.outcome == "killed"


def test_the_table_reports_the_kill_rate(rows: dict[tuple[str, str, str, str], suite.Row]) -> None:
    text = suite.table(list(rows.values()), 0.0)
    assert "(kill rate 100 %)" in text and "0 false fail(s)" in text
