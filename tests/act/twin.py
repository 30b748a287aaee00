"""``python -m tests.act.twin``: the one step of the action twin (tests/act/harness.py).

The container image runs ``python -m ci_onnx.action``; before a verify, its install-runtime step
pip-installs the target's runtime into the image's own interpreter. The act jobs of a test share
this host's virtual environment, which must not be changed (every job and every engineer uses it),
so where a target needs another runtime than the host's, the job gets its own interpreter instead:
the environment ``onnx-gate run`` would verify that target in (ci_onnx.host.envs, keyed by the target's
package and release, in the test's environment cache, $ACT_ENV_CACHE), made the interpreter the
entry point verifies in, as the image's is. Everything else is the entry point itself.

The node runner provisions onnxruntime-node itself, under the gate's cache directory; on GitHub
that is ~/.cache/onnx-gate (what the workflow's cache step restores), here the same test cache, so
no job writes to this host's home.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from ci_onnx import matrix
from ci_onnx.action import Inputs, runtime, split_multi
from ci_onnx.action import __main__ as entry
from ci_onnx.contracts.target import Target
from ci_onnx.host import envs
from ci_onnx.plan import cijobs
from ci_onnx.runners import python as python_kind
from ci_onnx.runners.base import Provisioning
from tests.act import standin_runner
from tests.support import cells

CACHE_ENV = "ACT_ENV_CACHE"
MATRIX_LIMIT_ENV = "ACT_MATRIX_LIMIT"
"""Entries per ``strategy.matrix`` in this run's plan job (GitHub's is 256): a test that proves the
verify-2 … jobs run under act does so with tens of cells, not hundreds of jobs."""


def job_interpreter(environ: dict[str, str]) -> str | None:
    """The interpreter this job verifies in when the host's runtime is not its targets', else None."""
    inputs = Inputs.from_env(environ)
    if inputs.get("command") != "verify" or not inputs.flag("install-runtime", default=True):
        return None
    targets = [Target.from_id(t) for t in split_multi(inputs.get("target"))]
    in_python = [t for t in targets if matrix.runners()[t.runner].can.interpreter]
    if not in_python or not runtime.plan_change_for([t.id for t in in_python]).needed:
        return None
    target = in_python[0]  # the job's targets share one environment (the plan groups them so)
    cache = environ.get(CACHE_ENV)
    if not cache:
        raise SystemExit(
            f"act twin: {target.id} needs another runtime than this host's and ${CACHE_ENV} is not "
            "set; the twin never installs into the shared environment"
        )
    how = Provisioning(Path(cache), environ, uv=envs.find_uv())
    return python_kind.RUNNER.provision(target.runtime, target.provider, how).program


def main() -> None:
    environ = dict(os.environ)
    if environ.get(standin_runner.ENABLE_ENV):
        standin_runner.register()
        os.environ["INPUT_INSTALL_RUNTIME"] = "false"  # every cell runs on this host's runtime
        environ["INPUT_INSTALL_RUNTIME"] = "false"
    if environ.get(MATRIX_LIMIT_ENV):
        cijobs.MAX_JOBS_PER_MATRIX = int(environ[MATRIX_LIMIT_ENV])
    if environ.get(CACHE_ENV):
        os.environ.setdefault("ONNX_GATE_CACHE", environ[CACHE_ENV])
    if environ.get(cells.DIE_ENV):  # a crash or a hang the test asks for, injected from outside
        cells.python_kind_hooked(Path(tempfile.mkdtemp(prefix="onnx-gate-hooks-")))
    python = job_interpreter(environ)
    if python is not None:
        print(f"act twin: this job's interpreter is {python} (the image would pip-install the runtime)")
        os.environ["INPUT_INSTALL_RUNTIME"] = "false"
        sys.executable = python
    entry.main()


if __name__ == "__main__":
    main()
