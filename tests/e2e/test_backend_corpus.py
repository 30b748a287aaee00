"""The ONNX-only gate agrees with onnxruntime's own ground truth on a fixed sample.

Two samples, both judged by the corpus script's code (tests/corpus/backend.py):

- synthetic cases built with onnx.helper (tests/corpus/synthetic.py): one per element type and value
  kind, and one per way the gate used to go wrong; available on any machine;
- named cases of ONNX's backend node tests, read from the onnx 1.22 wheel that pip downloads once
  into pytest's cache directory (skipped, saying so, where the index cannot be reached).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.corpus import backend, synthetic

pytestmark = pytest.mark.e2e

# batch[1] and batch[2] of each: a fixed batch of 2 serves its own size only (timed there, never
# guessed at another); no axis shared by every input is no batch axis; a dynamic one serves both
BATCHED = {
    "fixed_batch": ["skipped", "passed"],
    "first_dims_differ": ["skipped", "skipped"],
    "dynamic_batch": ["passed", "passed"],
}
EXPECTED = {"type_float4e2m1", "type_complex64"}  # onnxruntime 1.32 cannot express them
WRONG = {"wrong_output"}


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return synthetic.build(tmp_path_factory.mktemp("synthetic"))


def test_synthetic_cases_agree_with_the_ground_truth(cases: dict[str, Path], tmp_path: Path) -> None:
    assert len(cases) >= 25
    for name, case in cases.items():
        truth, why = backend.ground_truth(case)
        verdict = backend.gate(case, tmp_path / name, (1, 2) if name in BATCHED else ())
        assert verdict.status != "traceback", f"{name}: {verdict.why}"
        if name in EXPECTED:
            assert not truth and verdict.status == "expected", f"{name}: {why} / {verdict.why}"
            assert "cannot express" in verdict.why and "1.32" in verdict.why
        elif name in WRONG:
            assert not truth and verdict.status == "failed", f"{name}: {verdict.why}"
        else:
            assert truth, f"{name}: the ground truth failed: {why}"
            assert verdict.status == "passed", f"{name}: {verdict.why}"
        if name in BATCHED:
            batch = [status for check, status, _ in verdict.checks if check.startswith("batch[")]
            assert batch == BATCHED[name], f"{name}: {verdict.checks}"


# One real case per element type and value kind, and one per cause of the old disagreements.
SAMPLE = {
    "test_abs": True,
    "test_cast_FLOAT_to_BFLOAT16": True,
    "test_cast_FLOAT_to_FLOAT8E4M3FN": True,
    "test_cast_FLOAT8E5M2_to_FLOAT": True,
    "test_cast_FLOAT_to_INT4": True,
    "test_cast_UINT4_to_FLOAT": True,
    "test_string_concat": True,
    "test_cast_FLOAT4E2M1_to_FLOAT": False,
    "test_range_bfloat16_type_positive_delta": True,  # 0-d bfloat16 inputs
    "test_sequence_insert_at_back": True,
    "test_optional_get_element_optional_sequence": True,
    "test_optional_has_element_empty_optional_input": True,
    "test_constant": True,  # no inputs
    "test_matmul_2d": True,  # inputs whose first dims differ
    "test_ai_onnx_ml_label_encoder_string_int": True,  # only the ai.onnx.ml domain
    "test_isinf": True,  # infinities in the data
    "test_training_dropout": False,
}


@pytest.fixture(scope="module")
def node_cases(request: pytest.FixtureRequest) -> Path:
    cache = Path(request.config.cache.mkdir("onnx-gate-corpus"))
    try:
        return backend.node_cases(cache)
    except SystemExit as exc:
        pytest.skip(f"the onnx {backend.ONNX_WITH_DATA} wheel could not be downloaded with pip: {exc}")


def test_backend_sample_agrees_with_the_ground_truth(node_cases: Path, tmp_path: Path) -> None:
    for name, passes in SAMPLE.items():
        case = node_cases / name
        assert (case / "model.onnx").is_file(), (
            f"{name} is not in the onnx {backend.ONNX_WITH_DATA} test data"
        )
        truth, why = backend.ground_truth(case)
        assert truth is passes, f"{name}: ground truth {truth} ({why})"
        verdict = backend.gate(case, tmp_path / name)
        assert verdict.status != "traceback", f"{name}: {verdict.why}"
        assert (verdict.status == "passed") is passes, f"{name}: {verdict.status}: {verdict.why}"
