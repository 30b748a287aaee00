"""Verdicts first: every result and its JUnit are on disk before any triage starts, and a triage
that is killed, runs out of time or breaks costs the triage alone (a grouped verify job killed during
its first triage used to leave none of its results)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from ci_onnx.contracts.results import read_result
from ci_onnx.contracts.target import Status, Target
from ci_onnx.contracts.verify_options import VerifyOptions
from ci_onnx.runners.python import from_interpreter
from ci_onnx.verify import stage
from tests import bundles

IDS = ("ort1.32.0-cpu-op17-onnx", "ort1.32.0-cpu-op17-onnx-so-no_opt", "ort1.32.0-cpu-op17-onnx-so-basic")


def test_every_verdict_is_written_before_the_first_triage_and_a_broken_triage_costs_only_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("onnxruntime")
    bundle = bundles.mlp_bundle(tmp_path / "mlp")
    out = tmp_path / "out"
    on_disk_at_each_triage: list[set[str]] = []

    def triage(p: object, result: object, *args: object) -> object:
        on_disk_at_each_triage.append({f.stem for f in (out / "results").glob("*.json")})
        on_disk_at_each_triage[-1] &= {f.stem for f in (out / "junit").glob("*.xml")}
        raise RuntimeError("the triage broke (or was killed) here")

    monkeypatch.setattr(stage, "_wants_triage", lambda *a: True)
    monkeypatch.setattr(stage, "_triaged", triage)
    found = stage.verify_many(
        [(bundle, Target.from_id(t)) for t in IDS],
        out,
        VerifyOptions(latency_runs=2, timeout_s=120),
        base_env=dict(os.environ),
        environment=from_interpreter(sys.executable),
    )
    assert on_disk_at_each_triage and on_disk_at_each_triage[0] == set(IDS), on_disk_at_each_triage
    assert len(on_disk_at_each_triage) == len(IDS)
    for t, written in zip(IDS, found, strict=True):
        assert not isinstance(written, Exception), written
        assert read_result(out / "results" / f"{t}.json").status is Status.PASSED
