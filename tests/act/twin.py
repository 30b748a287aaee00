"""``python -m tests.act.twin``: the one step of the action twin (tests/act/harness.py).

The container image runs ``python -m ci_onnx.action``; before a verify, its install-runtime step
pip-installs the target's runtime into the image's own interpreter. The act jobs of a test share
this host's virtual environment, which must not be changed (every job and every engineer uses it),
so where a target needs another runtime than the host's, the job gets its own interpreter instead:
the environment ``onnx-gate run`` would verify that target in (ci_onnx.envs, keyed by the target's
package and release, in the test's environment cache, $ACT_ENV_CACHE), made the interpreter the
entry point verifies in, as the image's is. Everything else is the entry point itself.

The node runner provisions onnxruntime-node itself, under the gate's cache directory; on GitHub
that is ~/.cache/onnx-gate (what the workflow's cache step restores), here the same test cache, so
no job writes to this host's home.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ci_onnx import envs
from ci_onnx.action import Inputs, runtime
from ci_onnx.action import __main__ as entry
from ci_onnx.runners import python
from ci_onnx.runners.base import Provisioning
from ci_onnx.target import Target
from tests.act import standin_runner

CACHE_ENV = "ACT_ENV_CACHE"


def job_interpreter(environ: dict[str, str]) -> str | None:
    """The interpreter this job verifies in when the host's runtime is not the target's, else None."""
    inputs = Inputs.from_env(environ)
    if inputs.get("command") != "verify" or not inputs.flag("install-runtime", default=True):
        return None
    target = Target.from_id(inputs.get("target"))
    if target.runner != "python" or not runtime.plan_change(target.id).needed:
        return None
    cache = environ.get(CACHE_ENV)
    if not cache:
        raise SystemExit(
            f"act twin: {target.id} needs another runtime than this host's and ${CACHE_ENV} is not "
            "set; the twin never installs into the shared environment"
        )
    how = Provisioning(Path(cache), environ, uv=envs.find_uv())
    return python.RUNNER.provision(target.runtime, target.provider, how).program


def main() -> None:
    environ = dict(os.environ)
    if environ.get(standin_runner.ENABLE_ENV):
        standin_runner.register()
        os.environ["INPUT_INSTALL_RUNTIME"] = "false"  # every cell runs on this host's runtime
        environ["INPUT_INSTALL_RUNTIME"] = "false"
    if environ.get(CACHE_ENV):
        os.environ.setdefault("ONNX_GATE_CACHE", environ[CACHE_ENV])
    python = job_interpreter(environ)
    if python is not None:
        print(f"act twin: this job's interpreter is {python} (the image would pip-install the runtime)")
        os.environ["INPUT_INSTALL_RUNTIME"] = "false"
        sys.executable = python
    entry.main()


if __name__ == "__main__":
    main()
