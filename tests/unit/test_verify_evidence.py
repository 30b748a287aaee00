"""The judge is pure: it compares the Evidence it is handed and reads no file; evidence.load is the
only place that decodes outputs, and a file that does not decode keeps its old verdicts."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from ci_onnx import matrix
from ci_onnx.contracts import bundle, tensorproto
from ci_onnx.contracts.bundle import Manifest
from ci_onnx.contracts.results import SCHEMA_VERSION, Environment, Observation
from ci_onnx.contracts.target import Status, Target
from ci_onnx.contracts.verify_options import VerifyOptions
from ci_onnx.verify import decode, evidence, judge
from ci_onnx.verify.evidence import Evidence, Unreadable
from tests import bundles

CPU = "CPUExecutionProvider"
TARGET = Target("1.24.1", "cpu", 17, "onnx")


@pytest.fixture(scope="module")
def mlp(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Manifest]:
    b = bundles.mlp_bundle(tmp_path_factory.mktemp("b") / "mlp")
    return b, bundle.read_manifest(b)


def _observation(manifest: Manifest) -> Observation:
    return Observation(
        SCHEMA_VERSION,
        TARGET.id,
        Environment("1.24.1", (CPU,), (CPU,), "Linux"),
        outputs={ds.directory: {"logits": f"{ds.directory}/output_0.pb"} for ds in manifest.test_data_sets},
        unmeasured={"placement": "not asked", "batch": "not asked"},
    )


def _references(b: Path, manifest: Manifest) -> dict[str, dict[str, np.ndarray]]:
    return {
        ds.directory: {"logits": tensorproto.load(b / ds.directory / "output_0.pb")[1]}
        for ds in manifest.test_data_sets
    }


def test_load_decodes_what_the_observation_and_the_bundle_name(mlp: tuple[Path, Manifest]) -> None:
    b, manifest = mlp
    ev = evidence.load(manifest, _observation(manifest), b, b)
    refs = _references(b, manifest)
    assert set(ev.observed) == set(ev.reference) == set(refs)
    for ds, outputs in refs.items():
        np.testing.assert_array_equal(ev.reference[ds]["logits"], outputs["logits"])
        np.testing.assert_array_equal(ev.observed[ds]["logits"], outputs["logits"])
    assert ev.batch == {} and ev.batch_reference == {}


def test_the_judge_reads_no_file(mlp: tuple[Path, Manifest], monkeypatch: pytest.MonkeyPatch) -> None:
    """Any two sets of outputs, e.g. a base branch's as the reference: judged from memory alone."""
    b, manifest = mlp
    refs = _references(b, manifest)
    base = {ds: {"logits": v["logits"] + np.float32(1.0)} for ds, v in refs.items()}

    def no_reads(*_: object, **__: object) -> None:
        raise AssertionError("the judge read a file")

    matrix.providers(), matrix.runners(), matrix.runtimes()  # declared data, read once and cached
    monkeypatch.setattr(decode, "load", no_reads)
    monkeypatch.setattr(Path, "read_bytes", no_reads)
    monkeypatch.setattr(Path, "open", no_reads)
    obs = _observation(manifest)
    same = judge.judge(TARGET, manifest, obs, Evidence(reference=refs, observed=refs), VerifyOptions())
    assert same.check("parity[logits]").status == Status.PASSED  # type: ignore[union-attr]
    moved = judge.judge(TARGET, manifest, obs, Evidence(reference=base, observed=refs), VerifyOptions())
    parity = moved.check("parity[logits]")
    assert parity is not None and parity.status == Status.FAILED
    elements = sum(v["logits"].size for v in refs.values())
    assert parity.figures["out_of_tolerance"] == elements
    assert parity.figures["max_abs"] == pytest.approx(1.0, rel=1e-5)


def test_an_unreadable_output_fails_its_data_set_and_an_unreadable_decision_is_an_error(
    mlp: tuple[Path, Manifest],
) -> None:
    b, manifest = mlp
    refs = _references(b, manifest)
    first = manifest.test_data_sets[0].directory
    broken = {**refs, first: {"logits": Unreadable(f"{first}/output_0.pb: not a readable tensor")}}
    obs = _observation(manifest)
    without_decision = dataclasses.replace(manifest, decision=None)
    result = judge.judge(
        TARGET, without_decision, obs, Evidence(reference=refs, observed=broken), VerifyOptions()
    )
    parity = result.check("parity[logits]")
    assert parity is not None and parity.status == Status.FAILED
    assert parity.message.startswith(f"{first}: {first}/output_0.pb: not a readable tensor")
    assert manifest.decision is not None
    with pytest.raises(decode.DecodeError, match="not a readable tensor"):
        judge.judge(TARGET, manifest, obs, Evidence(reference=refs, observed=broken), VerifyOptions())


def test_a_file_that_does_not_decode_is_kept_as_unreadable(
    mlp: tuple[Path, Manifest], tmp_path: Path
) -> None:
    b, manifest = mlp
    (tmp_path / "bad.pb").write_bytes(b"\xff\xff\xff not a proto")
    first = manifest.test_data_sets[0].directory
    obs = dataclasses.replace(
        _observation(manifest),
        outputs={first: {"logits": "bad.pb"}},
        batch_outputs={"1": {"logits": "bad.pb", "not-declared": "bad.pb"}},
    )
    ev = evidence.load(manifest, obs, b, tmp_path)
    assert isinstance(ev.observed[first]["logits"], Unreadable)
    assert str(tmp_path / "bad.pb") in ev.observed[first]["logits"].message
    assert set(ev.batch["1"]) == {"logits"}  # only declared outputs are compared
    with pytest.raises(decode.DecodeError):
        evidence.value(ev.batch["1"]["logits"])
