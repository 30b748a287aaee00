"""The onnxruntime runner (Python): observe one bundle on one target, draw no verdict.

``python -m ci_onnx.observer.ort --bundle B --target-json '{…}' --ep NAME --out OBSDIR`` runs with a
target environment's interpreter (numpy + one onnxruntime flavour) and writes OBSDIR/observation.json
plus every observed output as a TensorProto file. One session per configuration: a plain session
serves parity, batch sizes, latency and memory; its parity runs are profiled to learn where every node
ran, and profiling ends before anything is timed.

``--jobs FILE`` observes several targets of this environment in this one process, each exactly as a
process of its own would (ci_onnx.runners.batch: the interpreter and imports paid once).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from ci_onnx import __version__
from ci_onnx.contracts import defaults, serde
from ci_onnx.contracts.bundle import MODEL, Manifest, read_manifest
from ci_onnx.contracts.results import SCHEMA_VERSION, Environment, Observation, PairedLatency
from ci_onnx.contracts.target import Target
from ci_onnx.contracts.tensorproto import Tensor
from ci_onnx.observer import coldstart, feeds, measure, optcache, session, sweep_runs
from ci_onnx.observer.placement import CPU, from_verbose_log, profile_nodes, summarise

MEMORY_THREADS = 4


@dataclasses.dataclass(frozen=True)
class Options:
    ep: str
    strict_fallback: bool = False
    latency_runs: int = int(defaults.of("verify.latency_runs"))
    memory_threads: int = MEMORY_THREADS
    placement: str = "auto"
    """How to learn where nodes ran: auto (assignment info + profile, else the verbose log), profile,
    or verbose-log."""
    session_options: dict[str, Any] = dataclasses.field(default_factory=dict)
    """The target's session-options preset (ci_onnx.observer.session); empty: the runtime's defaults."""
    opt_cache: str = ""
    """The optimized-model cache directory (ci_onnx.observer.optcache); empty: no cache probe."""
    cold_start: bool = False
    """Time a fresh process to its first answer (ci_onnx/observer/coldstart.py); on from the CLI."""
    paired_bundle: str = ""
    """The base commit's bundle of this target: timed interleaved with this one (``Observation.paired``)."""


SERVING_OFF = "verify.serving_figures is false in the config"


def observe(bundle: Path, target: Target, options: Options, out: Path) -> Observation:
    """Run ``bundle`` on this environment's onnxruntime and record what happened."""
    import onnxruntime as ort

    manifest = read_manifest(bundle, verify_hashes=False)
    providers = [options.ep] if options.ep == CPU else [options.ep, CPU]
    env = Environment(
        runtime_version=ort.__version__,
        providers_available=tuple(ort.get_available_providers()),
        providers_registered=(),
        platform=platform.platform(),
        runner="ort-python",
        runner_version=__version__,
    )
    obs = Observation(SCHEMA_VERSION, target.id, env, providers_requested=tuple(providers))
    model = str(bundle / MODEL)
    strict = options.strict_fallback and options.ep != CPU
    # The parity runs are profiled (placement), then profiling ends before anything is timed: one
    # session learns where nodes ran, instead of a second session created only for that.
    profile = str(out / "profile") if options.placement in ("auto", "profile") else ""
    preset = options.session_options
    start = time.perf_counter()
    try:
        if strict:
            try:
                sess = _session(ort, model, [options.ep], strict=True, profile=profile, preset=preset)
            except Exception as exc:
                obs = dataclasses.replace(obs, strict_fallback_error=message(exc))
                start = time.perf_counter()
                sess = _session(ort, model, providers, profile=profile, preset=preset)
        else:
            sess = _session(ort, model, providers, profile=profile, preset=preset)
    except Exception as exc:
        return dataclasses.replace(obs, load_error=message(exc))
    create_ms = (time.perf_counter() - start) * 1000.0
    env = dataclasses.replace(env, providers_registered=tuple(sess.get_providers()))
    obs = dataclasses.replace(obs, environment=env, session_create_ms=round(create_ms, 3))

    obs = parity_runs(sess, manifest, bundle, out, obs)
    obs = _placement(ort, sess if profile else None, model, providers, out, obs, options.placement)
    obs, feeds_by_n = serving_runs(sess, manifest, bundle, out, obs, options.latency_runs)
    obs = peak_memory(sess, feeds_by_n, options.memory_threads, options.latency_runs, obs)
    obs = sweep_runs.observe(
        sess, manifest, bundle, out, obs, options.latency_runs
    )  # after the memory figure
    del sess  # nothing below uses it, and its threads would only compete with what is timed there
    if options.paired_bundle and feeds_by_n:  # after the memory figure, which one session must make alone
        obs = _paired(ort, model, Path(options.paired_bundle), providers, preset, feeds_by_n, options, obs)
    if options.opt_cache:  # after every figure above, so the extra sessions are in none of them
        run_sets = functools.partial(_cached_runs, manifest=manifest, bundle=bundle, out=out, obs=obs)
        sha = manifest.files.get(MODEL, "")
        optcache.probe(ort, model, providers, preset, Path(options.opt_cache), sha, run_sets, out)
    if options.cold_start:  # last: a fresh process, while nothing else runs
        obs = coldstart.attach(obs, bundle, providers, out)
    return obs


def _paired(
    ort: Any,
    model: str,
    base: Path,
    providers: list[str],
    preset: dict[str, Any],
    feeds_by_n: dict[int, Any],
    options: Options,
    obs: Observation,
) -> Observation:
    """The base bundle timed beside this one, run for run, on the same inputs; why not, if it cannot be.

    Both sides get a fresh session made alike, one after the other (the observation's own session
    was profiled and served the memory figure's threads: timing it against a fresh one measured a
    30 % difference between two copies of one model), with thread spinning off: two sessions' pools
    spinning in turns on a 2-core runner took the cores from each other's runs."""
    try:
        sha = read_manifest(base, verify_hashes=False).files.get(MODEL, "")
        head_sess = _session(ort, model, providers, preset=preset, spinning=False)
        base_sess = _session(ort, str(base / MODEL), providers, preset=preset, spinning=False)
        pairs = [
            measure.interleaved(
                n,
                functools.partial(feeds.run, head_sess, inputs),
                functools.partial(feeds.run, base_sess, inputs),
                max(options.latency_runs, measure.PAIRED_RUNS),
            )
            for n, inputs in sorted(feeds_by_n.items())
        ]
    except Exception as exc:  # another input signature, a model the runtime refuses: say so
        return dataclasses.replace(obs, paired_error=f"the base bundle {base} was not timed: {message(exc)}")
    del head_sess, base_sess
    head, paired_base = zip(*pairs, strict=True)
    return dataclasses.replace(obs, paired=PairedLatency(sha, tuple(head), tuple(paired_base)))


def _cached_runs(sess: Any, *, manifest: Manifest, bundle: Path, out: Path, obs: Observation) -> Any:
    return parity_runs(sess, manifest, bundle, out / optcache.OUTPUTS, obs).outputs


def _session(
    ort: Any,
    model: str,
    providers: list[str],
    *,
    strict: bool = False,
    profile: str = "",
    preset: dict[str, Any] | None = None,
    spinning: bool = True,
) -> Any:
    so = session.apply(ort, ort.SessionOptions(), preset or {})
    so.log_severity_level = 3
    if not spinning:  # idle pool threads would spin on the cores the other session's run needs
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if strict:
        so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    if profile:
        so.enable_profiling = True
        so.profile_file_prefix = profile
        so.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    return ort.InferenceSession(model, so, providers=providers)


def parity_runs(sess: Any, manifest: Manifest, bundle: Path, out: Path, obs: Observation) -> Observation:
    """Each test data set run once; its outputs saved, or the runtime's message where it failed."""
    outputs: dict[str, dict[str, str]] = {}
    errors: dict[str, str] = {}
    for ds in manifest.test_data_sets:
        try:
            got = feeds.run_set(sess, manifest, feeds.read_inputs(manifest, bundle, ds.directory))
        except Exception as exc:
            errors[ds.directory] = message(exc)
            continue
        outputs[ds.directory] = feeds.save(out, ds.directory, manifest, got)
    return dataclasses.replace(obs, outputs=outputs, run_errors=errors)


def serving_runs(
    sess: Any, manifest: Manifest, bundle: Path, out: Path, obs: Observation, latency_runs: int
) -> tuple[Observation, dict[int, dict[str, Any]]]:
    """The batch runs (_batch_runs), then each size that ran timed; the sizes that ran → their
    feeds, for what is measured after (memory, the paired timing)."""
    obs, first_ms, samples = _batch_runs(sess, manifest, bundle, out, obs)
    axes = feeds.input_axes(manifest)
    feeds_by_n = {n: feeds.first(samples, n, axes) for n in sorted(first_ms)}
    stats = tuple(
        measure.latency(n, functools.partial(feeds.run, sess, inputs), latency_runs, first_ms=first_ms[n])
        for n, inputs in feeds_by_n.items()
    )
    return dataclasses.replace(obs, latency=stats), feeds_by_n


def peak_memory(
    sess: Any, feeds_by_n: dict[int, dict[str, Any]], threads: int, latency_runs: int, obs: Observation
) -> Observation:
    """The peak RSS while ``threads`` threads serve the largest batch that ran (none ran: nothing)."""
    if not feeds_by_n:
        return obs
    before = measure.rss_mb()
    peak = measure.peak_rss_while(
        functools.partial(feeds.run, sess, feeds_by_n[max(feeds_by_n)]), threads, max(2, latency_runs // 4)
    )
    return dataclasses.replace(
        obs,
        peak_rss_mb=peak,
        rss_before_mb=round(before, 2) if before is not None else None,
        memory_threads=threads,
    )


def _batch_runs(
    sess: Any, manifest: Manifest, bundle: Path, out: Path, obs: Observation
) -> tuple[Observation, dict[int, float], dict[str, Any]]:
    """Each served batch size in one run, and the same samples one at a time as its reference; the
    sizes that ran → how long that first run at the size took (ms), and the samples read (as many
    as the largest size: each size's feeds are their first rows).

    Only where the inputs have one batch axis (dynamic or declared), or at the model's own size where
    its batch axis is fixed (feeds.served: the judge compares that run with the bundle's reference;
    single runs could not be taken): else the judge skips the batch checks with the reason.
    """
    sizes = feeds.served(manifest)
    if not sizes or not manifest.test_data_sets:
        return obs, {}, {}
    fixed = feeds.batch_axis_problem(manifest) != ""
    try:
        data = feeds.read_inputs(manifest, bundle, manifest.test_data_sets[0].directory)
        axes = feeds.input_axes(manifest)
        samples = feeds.first(data, max(sizes), axes)
    except Exception as exc:
        return (
            dataclasses.replace(obs, batch_reference_error=f"reading the inputs failed: {message(exc)}"),
            {},
            {},
        )
    ref_error = ""
    singles: list[dict[str, Any]] = []
    try:
        singles = (
            [] if fixed else [feeds.run(sess, feeds.sample(samples, i, axes)) for i in range(max(sizes))]
        )
    except Exception as exc:
        ref_error = f"single-sample runs failed: {message(exc)}"
    reference = {}
    if singles:
        try:
            batched = feeds.output_axes(manifest)
            stacked = {k: _stack([s[k] for s in singles], batched[k]) for k in singles[0] if k in batched}
            reference = feeds.save(out, "batch_reference", manifest, stacked)
        except Exception as exc:
            ref_error = f"the single-sample outputs do not stack on their batch axis: {message(exc)}"
    files: dict[str, dict[str, str]] = {}
    errors: dict[str, str] = {}
    working: dict[int, float] = {}
    frozen_in_file = feeds.fixed_batch(sess, axes)
    for n in sizes:
        frozen = {name: d for name, d in frozen_in_file.items() if d != n}
        if frozen:  # declared a batch axis, but the file froze it
            name, d = next(iter(frozen.items()))
            errors[str(n)] = (
                f"the batch axis of input {name!r} is fixed at {d} in the model, so it cannot serve "
                f"batch {n}; export it with a dynamic batch axis (dynamic_axes)"
            )
            continue
        batch = feeds.first(samples, n, axes)
        try:
            start = time.perf_counter()
            got = feeds.run(sess, batch)
            first = (time.perf_counter() - start) * 1000.0
        except Exception as exc:
            errors[str(n)] = message(exc)
            continue
        files[str(n)] = feeds.save(out, f"batch_{n}", manifest, got)
        working[n] = first
    obs = dataclasses.replace(
        obs,
        batch_outputs=files,
        batch_errors=errors,
        batch_reference=reference,
        batch_reference_error=ref_error,
    )
    return obs, working, samples


def _stack(parts: list[Any], axis: int = 0) -> Tensor:
    if not all(isinstance(p, Tensor) and p.array.ndim > axis for p in parts):
        raise ValueError("an output is not a tensor with a batch axis")
    return Tensor(parts[0].name, parts[0].data_type, np.concatenate([p.array for p in parts], axis=axis))


def _placement(
    ort: Any,
    profiled_sess: Any,
    model: str,
    providers: list[str],
    out: Path,
    obs: Observation,
    method: str,
) -> Observation:
    """Assignment info with the profile trace of the parity runs where the runtime has them, else the
    verbose log. Ends the session's profiling, so later runs are not profiled."""
    error = ""
    if profiled_sess is not None:
        try:
            assigned = None
            if method == "auto" and hasattr(profiled_sess, "get_provider_graph_assignment_info"):
                assigned = [
                    (sub.ep_name, node.name, node.op_type)
                    for sub in profiled_sess.get_provider_graph_assignment_info()
                    for node in sub.get_nodes()
                ]
            trace = Path(profiled_sess.end_profiling())
            events = json.loads(trace.read_text())
            trace.unlink()
            profiled = profile_nodes(events)
            if profiled or assigned or _ran_cleanly(obs):
                # No node events after runs that succeeded: the graph was folded away entirely.
                return dataclasses.replace(obs, placement=summarise(providers[0], profiled, assigned or None))
            error = "the profile trace holds no node events"
        except Exception as exc:
            error = f"profiling failed: {message(exc)}"
    try:
        placement = from_verbose_log(providers[0], _verbose_log(ort, model, providers, out / "verbose.log"))
    except Exception as exc:
        placement, error = None, f"{error}; the verbose log failed: {message(exc)}".lstrip("; ")
    if placement is None:
        return dataclasses.replace(obs, placement_error=error or "the verbose log holds no node placements")
    return dataclasses.replace(obs, placement=placement)


def _ran_cleanly(obs: Observation) -> bool:
    """Whether every parity run succeeded (then no node events means no node was left to run)."""
    return bool(obs.outputs) and not obs.run_errors


def _verbose_log(ort: Any, model: str, providers: list[str], path: Path) -> str:
    """What onnxruntime's C++ logger writes to stderr while a session is created at verbose level."""
    so = ort.SessionOptions()
    so.log_severity_level = 0
    sys.stderr.flush()
    saved = os.dup(2)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.dup2(fd, 2)
        ort.InferenceSession(model, so, providers=providers)
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(fd)
    text = path.read_text(errors="replace")
    path.unlink()
    return text


def message(exc: BaseException) -> str:
    """The exception's text on one line, at most 2,000 characters."""
    text = " ".join(str(exc).split())
    return text[:2000] or type(exc).__name__


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ci_onnx.observer.ort", description=__doc__)
    parser.add_argument("--bundle", type=Path)
    parser.add_argument("--target-json", help="The Target, as JSON.")
    parser.add_argument("--ep", help="The execution provider to ask for first.")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--strict-fallback", action="store_true")
    parser.add_argument("--latency-runs", type=int, default=Options.latency_runs)
    parser.add_argument("--memory-threads", type=int, default=MEMORY_THREADS)
    parser.add_argument("--placement", choices=("auto", "profile", "verbose-log"), default="auto")
    parser.add_argument("--session-options", default="", help="The preset's settings, as JSON.")
    parser.add_argument("--opt-cache", default="", help="The optimized-model cache directory.")
    parser.add_argument("--no-cold-start", action="store_true", help="Do not time a fresh process.")
    parser.add_argument("--paired-bundle", default="", help="The base bundle, timed beside this one.")
    parser.add_argument(
        "--no-opt-cache", action="store_true", help="Do not probe the optimized-model cache (say so)."
    )
    parser.add_argument(
        "--jobs",
        metavar="FILE",
        help="Observe several targets in this one process: FILE lists each one's arguments (the ones "
        "above) as ci_onnx.runners.batch writes them; '-' reads them from stdin.",
    )
    args = parser.parse_args(argv)
    if args.jobs is not None:
        from ci_onnx.observer import jobs

        if args.jobs == "-":  # started early: import the runtime while the parent prepares the jobs
            import onnxruntime  # noqa: F401

        return jobs.serve(args.jobs, _job)
    missing = [
        f"--{n.replace('_', '-')}" for n in ("bundle", "target_json", "ep", "out") if not getattr(args, n)
    ]
    if missing:
        parser.error(f"the following arguments are required: {', '.join(missing)}")
    target = serde.from_json(Target, json.loads(args.target_json))
    options = Options(
        ep=args.ep,
        strict_fallback=args.strict_fallback,
        latency_runs=args.latency_runs,
        memory_threads=args.memory_threads,
        placement=args.placement,
        session_options=session.parse_arg(args.session_options),
        opt_cache=args.opt_cache,
        cold_start=not args.no_cold_start,
        paired_bundle=args.paired_bundle,
    )
    args.out.mkdir(parents=True, exist_ok=True)
    obs = observe(args.bundle, target, options, args.out)
    off = {
        k: SERVING_OFF
        for k, flag in (("cold_start", args.no_cold_start), ("optimized_cache", args.no_opt_cache))
        if flag
    }
    if off:
        obs = dataclasses.replace(obs, unmeasured={**obs.unmeasured, **off})
    (args.out / "observation.json").write_text(serde.dumps(obs))
    return 0


def _job(argv: list[str]) -> int:
    """One job of a ``--jobs`` batch: exactly what a process of its own would do with ``argv``."""
    import gc

    if _nested(argv):
        raise SystemExit("a job's arguments cannot hold --jobs")
    try:
        return main(argv)
    finally:
        gc.collect()  # the job's session and buffers are gone before the next one is measured


def _nested(argv: list[str]) -> bool:
    return any(a == "--jobs" or a.startswith("--jobs=") for a in argv)


def _exit_now(rc: int) -> None:
    """End this process without the interpreter's teardown (module clean-up, the runtime's thread
    pools): every job's files are written and closed, the markers flushed, and the parent waits for
    this exit before it goes on."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc)


if __name__ == "__main__":
    _rc = main()
    if "--jobs" in sys.argv[1:]:
        _exit_now(_rc)
    sys.exit(_rc)
