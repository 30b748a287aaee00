"""Real architectures pass the gate, or fail for the reason written in the corpus (no false fails).

A representative subset of tests/corpus (the signatures that used to break: a ``forward(*args)``
wrapper, nested past key values, keyword-only inputs, a 0-d output, TorchScript suspects in T5), at
opset 18 with both exporters plus dynamo at 17, where its down-conversion truly breaks GPT-2. The
whole table (13 models × 2 exporters × 2 opsets) is `python tests/corpus/real_models.py`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.corpus import real_models

pytestmark = pytest.mark.e2e

pytest.importorskip("transformers", reason="the dev extra installs transformers")

SUBSET = {
    "gpt2": ((17, 18), ("dynamo", "torchscript")),
    "gpt2_past": ((18,), ("dynamo", "torchscript")),
    "t5": ((18,), ("torchscript",)),
    "keyword": ((18,), ("dynamo", "torchscript")),
    "nested": ((18,), ("dynamo",)),
    "scalar": ((18,), ("dynamo", "torchscript")),
}


@pytest.fixture(scope="module")
def cells(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str, int], real_models.Cell]:
    """Each (model, exporter, opset) of SUBSET exported and verified once for the module."""
    mp = pytest.MonkeyPatch()
    mp.setenv("HF_HUB_OFFLINE", "1")
    mp.setenv("TRANSFORMERS_OFFLINE", "1")
    work = tmp_path_factory.mktemp("real-models")
    out: dict[tuple[str, str, int], real_models.Cell] = {}
    try:
        for entry in real_models.CORPUS:
            if entry.name in SUBSET:
                opsets, exporters = SUBSET[entry.name]
                for cell in real_models.run_entry(entry, work, opsets, exporters):
                    out[cell.key] = cell
    finally:
        mp.undo()
    return out


def _cases() -> list[tuple[str, str, int]]:
    return [(m, e, o) for m, (opsets, exporters) in SUBSET.items() for o in opsets for e in exporters]


@pytest.mark.parametrize(("model", "exporter", "opset"), _cases())
def test_cell_passes_or_fails_for_its_written_reason(
    cells: dict[tuple[str, str, int], real_models.Cell], model: str, exporter: str, opset: int
) -> None:
    cell = cells[(model, exporter, opset)]
    expected = real_models.EXPECTED.get(cell.key, ())
    if expected:
        assert set(cell.failed) == set(expected), cell.message
        assert real_models.REASONS[cell.key], "every expected failure is explained"
        return
    assert cell.verdict == "pass", f"false fail: {cell.failed}: {cell.message}"


def test_a_0d_output_keeps_shape_empty_in_the_bundle(
    cells: dict[tuple[str, str, int], real_models.Cell],
) -> None:
    from onnx import load_tensor

    from ci_onnx.contracts.bundle import read_manifest

    for exporter in ("dynamo", "torchscript"):
        cell = cells[("scalar", exporter, 18)]
        assert not cell.export_failed, cell.message
        bundle = Path(cell.bundle)
        specs = {s.name: list(s.shape) for s in read_manifest(bundle).outputs}
        assert specs["energy"] == [] and specs["z"] == ["batch", 6]
        assert list(load_tensor(str(bundle / "test_data_set_0" / "output_1.pb")).dims) == []


def test_a_suspect_branch_that_never_diverges_is_a_warning_not_a_failure(
    cells: dict[tuple[str, str, int], real_models.Cell],
) -> None:
    """transformers' mask and attention code converts tensors to Python booleans while tracing (the
    `q_length > 1` kind of check); the probes show the graph is right, so each is a warning."""
    cell = cells[("gpt2", "torchscript", 18)]
    assert "control-flow" not in cell.failed
    assert any("Converting a tensor to a Python boolean" in s for s in cell.suspects), cell.suspects
    assert all(":" in s.rsplit("(", 1)[-1] for s in cell.suspects), "each names its file:line"


def test_a_signature_the_inputs_cannot_call_is_one_line_naming_the_parameter(tmp_path: Path) -> None:
    from export_helpers import run_export, write_config

    cfg = write_config(
        tmp_path,
        f"""\
        model:
          factory: {real_models.ZOO}:keyword
          inputs: {{x: {{shape: [batch, 8]}}}}
          outputs: [y]
          dynamic_axes: {{x: {{0: batch}}}}
        export: {{opsets: [18], exporters: [torchscript]}}
        """,
    )
    result = run_export(cfg, tmp_path / "bundles")
    assert result.exit_code == 2
    line = result.output.strip().splitlines()[-1]
    assert line.startswith("onnx-gate: error: model.inputs: forward(x, *, scale, shift=None, clip=3.0)")
    assert "needs the parameter 'scale'" in line and "declare model.inputs.scale" in line
