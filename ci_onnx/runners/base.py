"""The runner seam: every runtime the artefact ships to is one runner kind behind one Protocol.

A kind provisions an environment for a release (cached), launches it on a bundle as a child process
with a timeout, and collects what it wrote: ``observation.json`` plus output TensorProto files, the
same files for every kind. A kind observes and never judges; comparison and verdicts live in
ci_onnx.verify, the same for every kind.

Adding a kind is one module that defines ``RUNNER`` plus a row in matrix/runners.toml, whose ``can``
block declares what the kind can do; :func:`collect` completes every kind's observation by that
declaration and the placement sources the kind names. A kind whose cells need a CI job of their own
also declares that job's table there (its set-up steps and how it verifies; the workflows are
generated from it, ci_onnx/orchestration/scaffold.py). A kind may also implement ``launch_many``
(:class:`BatchRunner`): several targets of one environment in one child, the interpreter and imports
paid once; the others keep one child per target.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from ci_onnx import matrix
from ci_onnx.contracts import proc, serde
from ci_onnx.contracts.errors import UsageError
from ci_onnx.contracts.results import Observation
from ci_onnx.contracts.target import Target
from ci_onnx.contracts.verify_options import VerifyOptions
from ci_onnx.observer.coldstart import KEY as COLD_START

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


@dataclasses.dataclass(frozen=True)
class Launch:
    """One target's launch: what :meth:`Runner.launch` and :meth:`BatchRunner.launch_many` take."""

    bundle: Path
    target: Target
    out_dir: Path
    options: VerifyOptions
    ep: str


class Runner(Protocol):
    kind: str

    def provision(self, release: str, provider: str, how: Provisioning) -> RunnerEnv:
        """The cached environment holding ``release`` for ``provider``; EnvironmentProblem if it cannot be."""
        ...

    def launch(self, env: RunnerEnv, x: Launch, *, base_env: Mapping[str, str]) -> proc.Completed:
        """Run the observer in a child process within ``x.options.timeout_s``: a crash or hang is a value."""
        ...

    def collect(self, out_dir: Path) -> Observation:
        """The Observation the child wrote; CollectError when there is none to read (:func:`collect`)."""
        ...


class BatchRunner(Runner, Protocol):
    """A kind that can observe several targets of one environment in one child process (optional).

    Crash isolation is kept: a crash or a hang is the Completed of the target in flight, and the
    targets after it still run (in a fresh child); each Completed reads as :meth:`Runner.launch`'s."""

    def launch_many(
        self,
        env: RunnerEnv,
        launches: Sequence[Launch],
        *,
        base_env: Mapping[str, str],
        on_done: Callable[[int, proc.Completed], None] | None = None,
    ) -> list[proc.Completed]: ...


def batches(runner: Runner) -> bool:
    """Whether ``runner`` implements :meth:`BatchRunner.launch_many`."""
    return callable(getattr(runner, "launch_many", None))


@contextlib.contextmanager
def early_child(runner: Runner, env: RunnerEnv, *, base_env: Mapping[str, str], count: int) -> Iterator[Any]:
    """A batch child started before its jobs are known, where the kind can (``early``) and there
    are two or more targets to give it: it pays its interpreter and imports while the caller still
    reads and hashes the bundles. None otherwise. Ended on the way out if it was never used."""
    start = getattr(runner, "early", None)
    if count < 2 or not callable(start) or not batches(runner):
        yield None
        return
    with start(env, base_env=base_env) as started:
        yield started


def launch_many(
    runner: Runner,
    env: RunnerEnv,
    launches: Sequence[Launch],
    *,
    base_env: Mapping[str, str],
    on_done: Callable[[int, proc.Completed], None] | None = None,
    early: Any = None,
) -> list[proc.Completed]:
    """Every launch, in one child where the kind batches (and there are two or more, or a child was
    started ``early`` for them), else one child each; ``on_done(i, completed)`` hears each as soon
    as it is known."""
    if (len(launches) > 1 or early is not None) and batches(runner):
        many: BatchRunner = runner  # type: ignore[assignment]
        if early is not None:
            return many.launch_many(env, launches, base_env=base_env, on_done=on_done, early=early)  # type: ignore[call-arg]
        return many.launch_many(env, launches, base_env=base_env, on_done=on_done)
    done = []
    for i, x in enumerate(launches):
        one = runner.launch(env, x, base_env=base_env)
        if on_done is not None:
            on_done(i, one)
        done.append(one)
    return done


def read_observation(out_dir: Path) -> Observation:
    """``out_dir/observation.json`` as an Observation (the part of collect every kind shares)."""
    path = out_dir / OBSERVATION
    if not path.is_file():
        raise CollectError("the runner wrote no observation.json")
    try:
        return serde.from_json(Observation, json.loads(path.read_bytes()))
    except (OSError, ValueError, TypeError, KeyError, RecursionError) as exc:
        raise CollectError(f"the runner wrote an unreadable observation.json ({exc})") from None


@dataclasses.dataclass(frozen=True)
class PlacementSources:
    """Where a kind's observer leaves what the placement is learnt from, when it does not write the
    Placement itself: a profile trace (onnxruntime's JSON), else a verbose log ("Node placements")."""

    profile: str = ""
    """The trace's file name in the out dir; empty: the kind writes none."""
    verbose_log: str = ""
    none_found: str = "the profile and the verbose log hold no node placements"
    """The placement error where neither holds a placement."""


NO_COLD_START = "the {kind} runner does not time a fresh process yet"
"""The reason a kind that does not declare ``can.cold_start`` has no cold start."""


def collect(kind: str, out_dir: Path, sources: PlacementSources | None = None) -> Observation:
    """The Observation of ``out_dir``, completed the same way for every kind: a cold start the kind
    does not measure (runners.toml: ``can.cold_start``) is declared unmeasured, and a placement the
    observer left as a profile trace or a verbose log (``sources``) is learnt from it: the trace's node
    events, else the log's placements, else (a trace without node events after runs that succeeded)
    a graph folded away entirely, as the Python observer says it. Written back when it changed."""
    obs = read_observation(out_dir)
    done = obs
    if not matrix.runners()[kind].can.cold_start and COLD_START not in obs.unmeasured:
        why = NO_COLD_START.format(kind=kind)
        done = dataclasses.replace(done, unmeasured={**obs.unmeasured, COLD_START: why})
    if sources is not None and obs.placement is None and not obs.load_error:
        done = _learn_placement(done, out_dir, sources)
    if done != obs:
        (out_dir / OBSERVATION).write_text(serde.dumps(done))
    return done


def _learn_placement(obs: Observation, out_dir: Path, sources: PlacementSources) -> Observation:
    """``obs`` with the placement its sources hold, or the error that they hold none; unchanged
    where the observer left none of them and said why (``unmeasured["placement"]``)."""
    from ci_onnx.observer.placement import from_verbose_log, profile_nodes, summarise

    trace = out_dir / sources.profile if sources.profile else None
    log = out_dir / sources.verbose_log if sources.verbose_log else None
    if not any(f is not None and f.is_file() for f in (trace, log)):
        return (
            obs
            if "placement" in obs.unmeasured
            else dataclasses.replace(obs, placement_error=sources.none_found)
        )
    requested = obs.providers_requested[0] if obs.providers_requested else "CPUExecutionProvider"
    placement, nodes, what = None, None, "profile trace"
    try:
        if trace is not None and trace.is_file():
            nodes = profile_nodes(json.loads(trace.read_bytes()))
            placement = summarise(requested, nodes, None) if nodes else None
        if placement is None and log is not None and log.is_file():
            what = "verbose log"
            placement = from_verbose_log(requested, log.read_text(errors="replace"))
    except (OSError, ValueError, TypeError, AttributeError, KeyError, RecursionError) as exc:
        raise CollectError(f"the runner wrote an unreadable {what} ({exc})") from None
    if placement is None and nodes is not None and obs.outputs and not obs.run_errors:
        placement = summarise(requested, nodes, None)  # no node ran after clean runs: all folded away
    if placement is None:
        return dataclasses.replace(obs, placement_error=sources.none_found)
    return dataclasses.replace(obs, placement=placement)


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
