"""Which families the search may verify on this machine, and that it verifies in the release's environment."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from ci_onnx.contracts.target import Status
from ci_onnx.contracts.verify_options import VerifyOptions
from ci_onnx.nightly import verifier
from ci_onnx.nightly.families import FamilyNight, group
from ci_onnx.plan import Plan
from ci_onnx.report import gate
from ci_onnx.report.collect import merge
from tests import bundles
from tests.support.nights import result, target


def families() -> dict[str, FamilyNight]:
    cells = [target("1.32.0", provider=p) for p in ("cpu", "openvino", "cuda")]
    plan = Plan(1, "onnx-gate.yml", "digitnet", tuple(cells))
    collection = merge({t.id: result(t, fails=True) for t in cells}, plan)
    return {f.key.provider: f for f in group(collection, gate.decide(collection, plan))}


def test_only_families_the_linux_container_serves_get_a_verifier(tmp_path: Path) -> None:
    make = verifier.for_family(
        tmp_path / "bundles", tmp_path / "work", tmp_path / "cache", VerifyOptions(), {}
    )
    fams = families()
    cpu = make(fams["cpu"])
    assert isinstance(cpu, verifier.EnvVerifier) and cpu.target.id == "ort1.32.0-cpu-op17-dynamo"
    assert make(fams["openvino"]) is not None and make(fams["cuda"]) is None
    no_bundles = verifier.for_family(None, tmp_path, tmp_path, VerifyOptions(), {})
    assert no_bundles(fams["cpu"]) is None


@pytest.mark.e2e
def test_the_verifier_verifies_the_bundle_on_the_release_it_is_asked_about(
    tmp_path: Path, env_cache: Path
) -> None:
    bundles.mlp_bundle(tmp_path / "bundles" / "op17-onnx")
    family = dataclasses.replace(target("1.32.0"), exporter="onnx")
    verify_at = verifier.EnvVerifier(
        family,
        tmp_path / "bundles",
        tmp_path / "work",
        env_cache,
        VerifyOptions(latency_runs=2),
        dict(os.environ),
    )
    assert verify_at("1.20.1") == Status.PASSED
    assert (tmp_path / "work" / "bisect" / "1.20.1" / "results" / "ort1.20.1-cpu-op17-onnx.json").is_file()
