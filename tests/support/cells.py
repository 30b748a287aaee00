"""Several cells verified at once, each with its own test hook and timeout: how the runner kinds' e2e
tests show that a crash, a hang or a throw is that cell's error while the others finish."""

from __future__ import annotations

import concurrent.futures
import os
from pathlib import Path

from ci_onnx import proc
from ci_onnx.runners import base
from ci_onnx.target import Target
from ci_onnx.verify import stage
from ci_onnx.verify_options import VerifyOptions

DIE_ENV = "ONNX_GATE_TEST_RUNNER_DIE"


def verify_at_once(
    bundles: Path, out: Path, env_cache: Path, cells: dict[str, tuple[str, float]]
) -> dict[str, stage.Written]:
    """Verify each ``target id: (die hook, timeout_s)`` in a thread of its own (an empty hook: none),
    from the bundles under ``bundles``, writing under ``out``; the results by target id, in order."""
    how = base.Provisioning(env_cache, proc.child_environment(os.environ))

    def verify(target_id: str) -> stage.Written:
        hook, timeout = cells[target_id]
        environ = {**how.environ, DIE_ENV: hook} if hook else how.environ
        t = Target.from_id(target_id)
        options = VerifyOptions(latency_runs=3, timeout_s=timeout)
        return stage.verify_target(
            bundles / t.bundle_key, t, out, options, base.Provisioning(env_cache, environ)
        )

    with concurrent.futures.ThreadPoolExecutor(len(cells)) as pool:
        return dict(zip(cells, pool.map(verify, cells), strict=True))
