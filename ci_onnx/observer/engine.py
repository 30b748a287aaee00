"""The observer of a runner kind that runs another engine than onnxruntime (OpenVINO, tract).

In-environment code: the environment holds the engine and numpy, nothing else. Each engine's
observer (``ci_onnx.observer.openvino_engine``, ``ci_onnx.observer.tract_engine``) opens the bundle's
model as an :class:`EngineSession`; everything after that is this module's and the Python observer's
parts, so the observation is the python kind's: the outputs of every test data set, each served batch
size against single runs, the sweep points, latency per batch size and peak memory. An engine that
refuses the model is the observation's ``load_error``, in the engine's own words (the judge fails
the ``load`` check with it), never an error of the environment.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ci_onnx import __version__
from ci_onnx.contracts import defaults, serde
from ci_onnx.contracts.bundle import Manifest, read_manifest
from ci_onnx.contracts.results import SCHEMA_VERSION, Environment, Observation
from ci_onnx.contracts.target import Target
from ci_onnx.contracts.tensorproto import Tensor, data_type_of
from ci_onnx.observer import coldstart, ort, sweep_runs

MEMORY_THREADS = ort.MEMORY_THREADS


@dataclasses.dataclass(frozen=True)
class Port:
    """An input or output as the engine's model declares it (the attributes feeds reads)."""

    name: str
    shape: tuple[int | str, ...]
    type: str = "tensor(float)"


class EngineSession(Protocol):
    """An engine's compiled model, as the observer's parts use a session."""

    def get_inputs(self) -> Sequence[Port]: ...

    def get_outputs(self) -> Sequence[Port]: ...

    def run_values(self, values: dict[str, Any]) -> dict[str, Any]:
        """One run: input name → Tensor in, output name → Tensor out (thread-safe: memory is
        measured with several threads serving)."""
        ...


class Refused(Exception):
    """The engine refused the model (an op it lacks, a dim it cannot resolve): its words, as given."""


def arrays(values: dict[str, Any]) -> dict[str, np.ndarray]:
    """The feeds as numpy arrays; an input that is not a tensor is refused (the engines take tensors)."""
    out = {}
    for name, v in values.items():
        if not isinstance(v, Tensor):
            raise Refused(f"input {name!r} is not a tensor; this engine takes tensors only")
        out[name] = v.array
    return out


def tensors(names: Sequence[str], got: Sequence[Any]) -> dict[str, Any]:
    """The engine's outputs (numpy arrays), named, as the observer's Tensors."""
    out = {}
    for name, value in zip(names, got, strict=True):
        arr = np.asarray(value)
        out[name] = Tensor(name, data_type_of(arr.dtype), arr)
    return out


@dataclasses.dataclass(frozen=True)
class Opened:
    """What an engine's observer hands back for a bundle: the session and what it knows about it."""

    session: EngineSession
    notes: tuple[str, ...] = ()
    annotate: Callable[[Observation], Observation] | None = None
    """Adds what only this engine tells (its placement, its effective options), after the runs."""
    cold_start: dict[str, Any] | None = None
    """How a fresh process opens the model on this engine (serve_once's ``engine``, with the
    ``package`` whose size is the runtime's); None: the cold start is not timed."""


def observe(
    bundle: Path,
    target: Target,
    out: Path,
    env: Environment,
    open_model: Callable[[Path, Manifest], Opened],
    *,
    ep: str,
    latency_runs: int = int(defaults.of("verify.latency_runs")),
    memory_threads: int = MEMORY_THREADS,
    cold_start: bool = False,
) -> Observation:
    """Run ``bundle`` on the engine ``open_model`` opens, and record what happened."""
    manifest = read_manifest(bundle, verify_hashes=False)
    obs = Observation(SCHEMA_VERSION, target.id, env, providers_requested=(ep,))
    start = time.perf_counter()
    try:
        opened = open_model(bundle, manifest)
    except Exception as exc:  # the engine's refusal: the load check fails with its words
        return dataclasses.replace(obs, load_error=ort.message(exc))
    create_ms = (time.perf_counter() - start) * 1000.0
    sess = opened.session
    env = dataclasses.replace(env, providers_registered=(ep,))
    obs = dataclasses.replace(obs, environment=env, session_create_ms=round(create_ms, 3), notes=opened.notes)
    obs = ort.parity_runs(sess, manifest, bundle, out, obs)
    obs, feeds_by_n = ort.serving_runs(sess, manifest, bundle, out, obs, latency_runs)
    try:
        obs = ort.peak_memory(sess, feeds_by_n, memory_threads, latency_runs, obs)
    except Exception as exc:  # an engine that cannot serve from threads: memory not measured, said why
        why = f"serving the largest batch from {memory_threads} threads failed: {ort.message(exc)}"
        obs = dataclasses.replace(obs, unmeasured={**obs.unmeasured, "memory": why})
    obs = sweep_runs.observe(sess, manifest, bundle, out, obs, latency_runs)
    if opened.annotate is not None:
        obs = opened.annotate(obs)
    fresh = opened.cold_start
    del sess, opened  # the engine's threads would compete with the fresh process timed below
    if cold_start and fresh is not None:  # last: a fresh process, while nothing else runs
        obs = coldstart.attach(obs, bundle, (ep,), out, engine=fresh)
    return obs


def parser(prog: str, doc: str | None) -> argparse.ArgumentParser:
    """The arguments every engine's observer takes (the python observer's names)."""
    p = argparse.ArgumentParser(prog=prog, description=doc)
    p.add_argument("--bundle", type=Path, required=True)
    p.add_argument("--target-json", required=True, help="The Target, as JSON.")
    p.add_argument("--ep", required=True, help="The provider the judge asks for (what was registered).")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--latency-runs", type=int, default=int(defaults.of("verify.latency_runs")))
    p.add_argument("--memory-threads", type=int, default=MEMORY_THREADS)
    p.add_argument("--no-cold-start", action="store_true", help="Do not time a fresh process (say so).")
    return p


def environment(runtime_version: str, runner: str, available: Sequence[str]) -> Environment:
    return Environment(
        runtime_version=runtime_version,
        providers_available=tuple(available),
        providers_registered=(),
        platform=platform.platform(),
        runner=runner,
        runner_version=__version__,
    )


def write(args: argparse.Namespace, env: Environment, open_model: Callable[[Path, Manifest], Opened]) -> int:
    """Observe as ``args`` say and write observation.json (the entry point of each engine's observer)."""
    target = serde.from_json(Target, json.loads(args.target_json))
    args.out.mkdir(parents=True, exist_ok=True)
    obs = observe(
        args.bundle, target, args.out, env, open_model, ep=args.ep, latency_runs=args.latency_runs,
        memory_threads=args.memory_threads, cold_start=not args.no_cold_start,
    )  # fmt: skip
    if args.no_cold_start:
        obs = dataclasses.replace(obs, unmeasured={**obs.unmeasured, coldstart.KEY: ort.SERVING_OFF})
    (args.out / "observation.json").write_text(serde.dumps(obs))
    return 0
