"""Several cells verified at once, each with its own test hook and timeout: how the runner kinds' e2e
tests show that a crash, a hang or a throw is that cell's error while the others finish.

The hook is the tests' own (tests/support/hooks): the cell's observer program runs through
``hooks/die``, which crashes or hangs it where ``$ONNX_GATE_TEST_RUNNER_DIE`` names the cell (a web
cell's page hangs or throws); no observer ships a hook of its own.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import os
import stat
from pathlib import Path

from ci_onnx import proc
from ci_onnx.runners import base
from ci_onnx.target import Target
from ci_onnx.verify import stage
from ci_onnx.verify_options import VerifyOptions

DIE_ENV = "ONNX_GATE_TEST_RUNNER_DIE"
HOOKS = Path(__file__).parent / "hooks"
HOOKED_PATH = HOOKS / "bin"
"""A directory to put first on PATH: its ``node`` is the first other node, run through the hook."""


def hooked(env: base.RunnerEnv, where: Path) -> base.RunnerEnv:
    """``env`` whose observer program runs through the test hook (a script written in ``where``)."""
    where.mkdir(parents=True, exist_ok=True)
    script = where / f"hooked-{env.kind}-{env.release}"
    script.write_text(f'#!/bin/sh\nexec "{HOOKS / "die"}" "{env.program}" "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return dataclasses.replace(env, program=str(script))


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
        env = hooked(base.provision(t, how), out / "hooks" / t.id)
        options = VerifyOptions(latency_runs=3, timeout_s=timeout)
        return stage.verify(bundles / t.bundle_key, t, out, options, base_env=environ, environment=env)

    with concurrent.futures.ThreadPoolExecutor(len(cells)) as pool:
        return dict(zip(cells, pool.map(verify, cells), strict=True))
