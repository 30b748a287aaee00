"""Verdicts first: in a grouped verify, every result and JUnit is on disk before the first triage
starts, so a triage that is killed (SIGTERM, a job's timeout) costs only the triage."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ci_onnx.contracts.results import read_result
from ci_onnx.contracts.target import Status, Target

CHILD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    import onnxruntime
    from ci_onnx.runners.python import from_interpreter
    from ci_onnx.contracts.target import Target
    from ci_onnx.triage import attach
    from ci_onnx.verify import stage
    from ci_onnx.contracts.verify_options import VerifyOptions
    from tests import bundles

    root = Path(sys.argv[1])

    def hang(req, base_env):
        (root / f"triaging-{req.target.id}").touch()
        time.sleep(600)

    attach.bounded = hang
    items = [
        (
            bundles.mlp_bundle(root / f"op{o}-onnx", opset=o, perturb=lambda s, i, v: v + 1.0),
            Target(onnxruntime.__version__, "cpu", o, "onnx"),
        )
        for o in (15, 16, 17)
    ]
    options = VerifyOptions(latency_runs=1, serving_figures=False, triage_timeout_s=120)
    stage.verify_many(items, root / "out", options, base_env={}, environment=from_interpreter(sys.executable))
    """
)


def test_sigterm_during_the_first_of_three_triages_leaves_three_results(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path)], cwd=root)
    try:
        deadline = time.monotonic() + 180
        while not list(tmp_path.glob("triaging-*")) and child.poll() is None:
            assert time.monotonic() < deadline, "no triage started"
            time.sleep(0.2)
        assert child.poll() is None, f"the verify ended before any triage ({child.returncode})"
        child.send_signal(signal.SIGTERM)
        assert child.wait(timeout=60) == -signal.SIGTERM
    finally:
        if child.poll() is None:
            child.kill()
    assert len(list(tmp_path.glob("triaging-*"))) == 1, "killed during the first triage"
    results = sorted((tmp_path / "out" / "results").glob("*.json"))
    assert len(results) == 3 and len(list((tmp_path / "out" / "junit").glob("*.xml"))) == 3
    for path in results:
        r = read_result(path)
        assert r.status is Status.FAILED and r.triage is None, r


def test_a_cell_whose_export_failed_is_triaged_only_once_every_verdict_of_its_group_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its verdict is known before anything runs; its triage (of the export's reference-parity) still
    waits for the cells the runner observes after it."""
    import json

    import onnxruntime

    from ci_onnx.contracts.verify_options import VerifyOptions
    from ci_onnx.runners.python import from_interpreter
    from ci_onnx.verify import stage
    from tests import bundles

    failed = bundles.mlp_bundle(tmp_path / "op16-onnx", opset=16)
    manifest = json.loads((failed / "manifest.json").read_text())
    parity = {"name": "reference-parity", "status": "failed", "message": "planted",
              "figures": {"test_data_set_0/logits": {"out_of_tolerance": 3}}}  # fmt: skip
    manifest.update(findings=[parity])
    (failed / "manifest.json").write_text(json.dumps(manifest))
    fine = bundles.mlp_bundle(tmp_path / "op17-onnx", opset=17)
    release = onnxruntime.__version__
    targets = [Target(release, "cpu", 16, "onnx"), Target(release, "cpu", 17, "onnx")]
    out = tmp_path / "out"
    seen: list[set[str]] = []

    def triaged(p: object, result: object, *args: object) -> object:
        seen.append({f.stem for f in (out / "results").glob("*.json")})
        return result

    monkeypatch.setattr(stage, "_triaged", triaged)
    stage.verify_many(
        list(zip([failed, fine], targets, strict=True)), out, VerifyOptions(latency_runs=1, serving_figures=False),
        base_env={}, environment=from_interpreter(sys.executable),
    )  # fmt: skip
    assert seen == [{t.id for t in targets}], seen
