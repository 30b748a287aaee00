"""Which families the search may verify on this machine (the verification itself needs the verify stage)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ci_onnx.nightly import verifier
from ci_onnx.nightly.families import FamilyNight, group
from ci_onnx.plan import Plan
from ci_onnx.report.collect import merge
from tests.support.nights import result, target


def families() -> dict[str, FamilyNight]:
    cells = [target("1.32.0", provider=p) for p in ("cpu", "openvino", "cuda")]
    plan = Plan(1, "onnx-gate.yml", "digitnet", tuple(cells))
    return {f.key.provider: f for f in group(merge({t.id: result(t, fails=True) for t in cells}, plan))}


def test_only_families_the_linux_container_serves_get_a_verifier(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(verifier, "available", lambda: True)
    make = verifier.for_family(tmp_path / "bundles", tmp_path / "work", options=None)
    fams = families()
    cpu = make(fams["cpu"])
    assert isinstance(cpu, verifier.EnvVerifier) and cpu.target.id == "ort1.32.0-cpu-op17-dynamo"
    assert make(fams["openvino"]) is not None and make(fams["cuda"]) is None
    assert verifier.for_family(None, tmp_path, None)(fams["cpu"]) is None  # no bundles: no verifier


def test_without_the_verify_stage_there_is_no_verifier(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(verifier, "available", lambda: False)
    assert verifier.for_family(tmp_path, tmp_path, None)(families()["cpu"]) is None
