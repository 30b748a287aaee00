"""The native observer's parsers of untrusted bytes, built under AddressSanitizer and UBSan and run
over the hostile files and a bounded mutation session (tests/robustness/sanitized.py): no report,
no crash, and the same verdict as the Python codec on every file.

``ONNX_GATE_SANITIZER_S`` sets the session's length (default 8 s; CI runs the default).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ci_onnx.contracts import tensorproto as tp
from tests.robustness import sanitized

pytestmark = pytest.mark.skipif(
    sanitized.compiler() is None, reason="no C compiler (cc, gcc or clang) on PATH"
)
SECONDS = float(os.environ.get("ONNX_GATE_SANITIZER_S", "8"))


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return sanitized.build(tmp_path_factory.mktemp("sanitized"))


def _one(driver: Path, tmp_path: Path, kind: str, data: bytes) -> str:
    done = sanitized.run_driver(driver, tmp_path / "one.bin", [(kind, data)])
    assert not any(m in done.stderr for m in sanitized.REPORT_MARKS), done.stderr[-3000:]
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


@pytest.mark.parametrize("name", sorted(sanitized.HOSTILE))
def test_a_hostile_tensor_file_is_refused_by_both_codecs_without_a_report(
    driver: Path, tmp_path: Path, name: str
) -> None:
    data = sanitized.HOSTILE[name]
    verdict = _one(driver, tmp_path, "T", data)
    assert verdict.startswith("0 "), f"the C codec accepted {name}: {verdict}"
    with pytest.raises(tp.TensorProtoError):
        tp.loads_tensor(data)


def test_a_manifest_dimension_no_integer_can_hold_is_refused_without_undefined_behaviour(
    driver: Path, tmp_path: Path
) -> None:
    seeds = sanitized.manifest_seeds(tmp_path)
    assert _one(driver, tmp_path, "M", seeds["real"]).startswith("1 ")
    for name in ("dim0-2^70", "dim0-1e400", "dim0-nan", "dim0-fraction"):
        verdict = _one(driver, tmp_path, "M", seeds[name])
        assert verdict.startswith("0 inputs[0].shape[0] is neither a name nor an integer"), (name, verdict)
    assert _one(driver, tmp_path, "M", seeds["lone-surrogate"]).startswith("0 not valid JSON (a bad string)")


def test_a_manifest_sweep_point_outside_the_bundle_or_past_any_integer_is_refused(
    driver: Path, tmp_path: Path
) -> None:
    real = sanitized.manifest_seeds(tmp_path)["real"]
    assert b'"sweep_sets": []' in real

    def with_point(point: str) -> bytes:
        return real.replace(b'"sweep_sets": []', f'"sweep_sets": [{point}]'.encode())

    good = '{"directory": "sweep_0_seq_7", "symbol": "seq", "size": 7, "count": 2}'
    assert _one(driver, tmp_path, "M", with_point(good)).startswith("1 ")
    for bad in ('"../up"', '"/abs"'):
        point = good.replace('"sweep_0_seq_7"', bad)
        assert _one(driver, tmp_path, "M", with_point(point)).startswith(
            "0 sweep_sets[0] is not a sweep point"
        )
    for size in (str(2**70), "1e400", "-nan", "0", "2.5"):
        point = good.replace('"size": 7', f'"size": {size}')
        assert _one(driver, tmp_path, "M", with_point(point)).startswith(
            "0 sweep_sets[0] is not a sweep point"
        )
    assert _one(driver, tmp_path, "M", real.replace(b'"sweep_sets": []', b'"sweep_sets": 3')).startswith(
        "0 sweep_sets is not a list"
    )


def test_a_bounded_mutation_session_finds_no_report_and_no_disagreement(tmp_path: Path) -> None:
    found = sanitized.session(tmp_path, SECONDS)
    assert found.sanitizer_reports == 0, found.report
    assert found.driver_failures == 0, found.report
    assert not found.disagreements, found.disagreements[:10]
    assert found.cases >= 4000 and found.manifests > 0
