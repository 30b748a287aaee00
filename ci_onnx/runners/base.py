"""The runner seam: every runtime the artefact ships to is one runner kind behind one Protocol.

A kind provisions an environment for a release (cached), launches it on a bundle as a child process
with a timeout, and collects what it wrote: ``observation.json`` plus output TensorProto files, the
same files for every kind. A kind observes and never judges; comparison and verdicts live in
ci_onnx.verify, the same for every kind.

Adding a kind is one module that defines ``RUNNER`` plus a row in matrix/runners.toml.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from ci_onnx import matrix, proc, serde
from ci_onnx.errors import UsageError
from ci_onnx.results import Observation
from ci_onnx.target import Target
from ci_onnx.verify.options import VerifyOptions

OBSERVATION = "observation.json"


@dataclasses.dataclass(frozen=True)
class RunnerEnv:
    """A provisioned environment: where one release of one kind is installed, and what runs it."""

    kind: str
    release: str
    path: Path
    """The installation (a virtual environment, an npm prefix)."""
    program: str
    """The executable that runs the kind's observer (the environment's python, node)."""
    package: str = ""


@dataclasses.dataclass(frozen=True)
class Provisioning:
    """Where and how environments are created (read once at the edge and passed in)."""

    cache_dir: Path
    environ: Mapping[str, str]
    uv: str | None = None


class CollectError(Exception):
    """The runner's files are missing or unreadable: an error result, never a crash of the gate."""


class Runner(Protocol):
    kind: str

    def provision(self, release: str, provider: str, how: Provisioning) -> RunnerEnv:
        """The cached environment holding ``release`` for ``provider``; EnvironmentProblem if it cannot be."""
        ...

    def launch(
        self,
        env: RunnerEnv,
        bundle: Path,
        target: Target,
        out_dir: Path,
        options: VerifyOptions,
        *,
        ep: str,
        base_env: Mapping[str, str],
    ) -> proc.Completed:
        """Run the observer in a child process within ``options.timeout_s``: a crash or hang is a value."""
        ...

    def collect(self, out_dir: Path) -> Observation:
        """The Observation the child wrote; CollectError when there is none to read."""
        ...


def read_observation(out_dir: Path) -> Observation:
    """``out_dir/observation.json`` as an Observation (the part of collect every kind shares)."""
    path = out_dir / OBSERVATION
    if not path.is_file():
        raise CollectError("the runner wrote no observation.json")
    try:
        return serde.from_json(Observation, json.loads(path.read_bytes()))
    except (OSError, ValueError, TypeError, KeyError, RecursionError) as exc:
        raise CollectError(f"the runner wrote an unreadable observation.json ({exc})") from None


def get(kind: str) -> Runner:
    """The runner of ``kind``, from the module runners.toml names for it."""
    info = matrix.runners().get(kind)
    if info is None:
        raise UsageError(f"unknown runner {kind!r}; known: {', '.join(matrix.runners())}")
    module = importlib.import_module(info.module)
    runner: Runner = module.RUNNER
    return runner


def provision(target: Target, how: Provisioning) -> RunnerEnv:
    """The environment that serves ``target``: its runner kind, its release, its provider."""
    return get(target.runner).provision(target.runtime, target.provider, how)
