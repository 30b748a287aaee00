"""Several cells verified at once, each with its own test hook and timeout: how the runner kinds' e2e
tests show that a crash, a hang or a throw is that cell's error while the others finish.

The hook is the tests' own (tests/support/hooks): the cell's observer program runs through
``hooks/die``, which crashes or hangs it where ``$ONNX_GATE_TEST_RUNNER_DIE`` names the cell (a web
cell's page hangs or throws; the Python observer dies after the cell's session loads); no observer
ships a hook of its own. :func:`python_kind_hooked` puts every Python environment of a whole run
(`onnx-gate run`, `verify`, the action) through it.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import hashlib
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ci_onnx.contracts import proc
from ci_onnx.contracts.target import Target
from ci_onnx.contracts.verify_options import VerifyOptions
from ci_onnx.runners import base
from ci_onnx.verify import stage

DIE_ENV = "ONNX_GATE_TEST_RUNNER_DIE"
HOOKS = Path(__file__).parent / "hooks"
HOOKED_PATH = HOOKS / "bin"
"""A directory to put first on PATH: its ``node`` is the first other node, run through the hook."""


def hooked(env: base.RunnerEnv, where: Path) -> base.RunnerEnv:
    """``env`` whose observer program runs through the test hook (a script written in ``where``)."""
    where.mkdir(parents=True, exist_ok=True)
    name = hashlib.sha256(env.program.encode()).hexdigest()[:12]
    script = where / f"hooked-{env.kind}-{env.release}-{name}"
    with tempfile.NamedTemporaryFile("w", dir=where, delete=False) as f:  # whole, or not there yet
        f.write(f'#!/bin/sh\nexec "{HOOKS / "die"}" "{env.program}" "$@"\n')
    os.chmod(f.name, os.stat(f.name).st_mode | stat.S_IXUSR)
    os.replace(f.name, script)
    return dataclasses.replace(env, program=str(script))


def python_kind_hooked(where: Path, patch: Callable[[Any, str, Any], None] = setattr) -> None:
    """From now on, every environment of the python kind, provisioned or given (``verify --python``),
    runs its observer through the test hook (scripts written in ``where``). ``patch``: how, e.g. a
    test's ``monkeypatch.setattr``, which undoes it after the test."""
    from ci_onnx.runners import python

    provision, given = python.PythonRunner.provision, python.from_interpreter

    def provision_hooked(self: Any, release: str, provider: str, how: base.Provisioning) -> base.RunnerEnv:
        return hooked(provision(self, release, provider, how), where)

    patch(python.PythonRunner, "provision", provision_hooked)
    patch(python, "from_interpreter", lambda interpreter: hooked(given(interpreter), where))


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
