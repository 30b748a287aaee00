"""Verdicts first: in a grouped verify, every result and JUnit is on disk before the first triage
starts, so a triage that is killed (SIGTERM, a job's timeout) costs only the triage."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from ci_onnx.results import read_result
from ci_onnx.target import Status

CHILD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    import onnxruntime
    from ci_onnx.runners.python import from_interpreter
    from ci_onnx.target import Target
    from ci_onnx.triage import attach
    from ci_onnx.verify import stage
    from ci_onnx.verify_options import VerifyOptions
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
