"""A stand-in for the python runner kind's provisioning, only in tests: many cells, nothing to install.

With it, a python cell installs nothing: it is observed by the python kind's own observer
(ci_onnx.observer.ort) with this host's interpreter and onnxruntime, whatever release the cell names.
Plans are unchanged (``latest-N`` still plans N real releases from the index, and the ids are the
python kind's), so the release axis multiplies cells, which is what a plan of more than 256 cells of
one kind needs (the workflow's verify, verify-2 … jobs and the report's count); no verdict about a
release comes from it. :func:`register` swaps the kind's module in the runner table of one process:
the act twin does it in every job when $ACT_STANDIN_RUNNER is set (and then installs no runtime,
as the image's install-runtime would), a test does it for its local run.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping
from pathlib import Path

from ci_onnx import matrix
from ci_onnx.contracts import proc
from ci_onnx.contracts.results import Observation
from ci_onnx.runners.base import Launch, Provisioning, RunnerEnv, read_observation
from ci_onnx.runners.python import RUNNER as PYTHON

KIND = "python"
ENABLE_ENV = "ACT_STANDIN_RUNNER"


class StandinRunner:
    kind = KIND

    def provision(self, release: str, provider: str, how: Provisioning) -> RunnerEnv:
        return RunnerEnv(KIND, release, Path(sys.prefix), sys.executable, "onnxruntime (this host's)")

    def launch(self, env: RunnerEnv, x: Launch, *, base_env: Mapping[str, str]) -> proc.Completed:
        return PYTHON.launch(env, x, base_env=base_env)

    def collect(self, out_dir: Path) -> Observation:
        return read_observation(out_dir)


RUNNER = StandinRunner()


def info() -> matrix.RunnerInfo:
    """The python row of the runner table, served by this module."""
    return dataclasses.replace(matrix.runners()[KIND], module=__name__)


def register() -> None:
    """For this process: the python kind's cells provisioned by this module."""
    matrix.runners()[KIND] = info()
