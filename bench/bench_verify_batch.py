"""Verify of several targets that share one environment: one runner process for all of them against
one per target, the bare script doing the same work, and Polygraphy per target.

    python -m bench.bench_verify_batch [--runs 5] [--work bench/.work] [--ort 1.32.0] [--out bench/BATCH.md]

The targets are the example DigitNet's four bundles (opsets 17 and 18 × the dynamo and TorchScript
exporters, made once with the real `onnx-gate export`) on one onnxruntime release on the CPU: the
shape of one environment's share of the example's plan. Every case does all four targets and runs in
one interleaved loop (after one warm-up round); figures are medians and ratios to a baseline measured
in the same loop:

- bare script, one process (the baseline): bench/bare_verify.py's full work for each bundle in turn,
  in one interpreter (numpy and onnxruntime imported once), nothing written: as cheap as it gets;
- bare script, one process per target: the same, an interpreter each;
- onnx-gate, one runner process: the verify stage (`stage.verify_many`, what `onnx-gate run` calls
  for an environment's targets) in a parent process of its own, judging each target while the runner
  observes the next, writing every observation, result JSON and JUnit file;
- the same, inside a run: of that same process, the time `stage.verify_many` itself takes (its
  runner child's start, imports and work, every judgement and file), without the parent's own
  interpreter start and imports: `onnx-gate run` pays those once for the whole run, not per
  environment, so this is what a local run spends verifying one environment;
- onnx-gate, one runner process per target: the same stage, one `stage.verify` per target (what
  `onnx-gate run` did before: a runner interpreter each);
- the same check as Polygraphy (parity, with no batch, latency or memory work: each bundle's copy that
  serves no batch sizes, see bench/README.md, measure 2, and verify.serving_figures off, so no cold
  start and no optimized-model cache): onnx-gate with one runner process, against
  `polygraphy run --onnxrt` once per target (Polygraphy checks one model per process) from its own
  torch-free environment, and the bare parity-only script in one process.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import os
import resource
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bench import harness, prepare

HERE = Path(__file__).resolve().parent
BARE = HERE / "bare_verify.py"
KEYS = ("op17-dynamo", "op17-torchscript", "op18-dynamo", "op18-torchscript")
BARE_ONE, BARE_EACH, GATE_ONE, GATE_EACH = (
    "bare script, one process",
    "bare script, one process per target",
    "onnx-gate verify, one runner process",
    "onnx-gate verify, one runner process per target",
)
GATE_IN_RUN = "onnx-gate verify inside a run (`stage.verify_many`, its parent already started)"
RUNNER_ONE = "the runner process alone (`python -m ci_onnx.observer.ort --jobs`)"
POLY, GATE_LEAN, BARE_LEAN = (
    "polygraphy run --onnxrt, once per target",
    "onnx-gate verify, parity only, one runner process",
    "bare script, parity only, one process",
)
BARE_LOOP = (
    "import sys; sys.path.insert(0, sys.argv[1]); import bare_verify as b; "
    "lean = sys.argv[2] == 'lean'; "
    "sys.exit(max(b._work(s, lean, b.Phases()) for s in sys.argv[3:]))"
)
"""bare_verify.py's work for several specs in one interpreter (its imports paid once)."""
INNER_TIMES = "ONNX_GATE_BENCH_INNER_TIMES"
"""A file ``drive`` appends the seconds of its stage call to (the in-run figure)."""


def bundles(work: Path) -> list[prepare.Prepared]:
    """The example's four bundles, exported once, each with the baselines' inputs (untimed)."""
    from bench import common, prepare

    out = work / "batch" / "bundles"
    if not all((out / k / "manifest.json").is_file() for k in KEYS):
        cfg = prepare.ROOT / "examples" / "tinycnn" / "onnx-gate.yml"
        only = [a for k in KEYS for a in ("--only", k)]
        common.check_call([common.onnx_gate(), "export", "--config", str(cfg), *only, "--out", str(out)])
    return [
        prepare._baselines(f"DigitNet {k}", out / k, f"ort{{ort}}-cpu-{k}", work / "batch" / k) for k in KEYS
    ]


def drive(argv: list[str]) -> int:
    """The parent side of verify for several targets, timed as a process of its own:
    ``drive MODE PYTHON OUT BUNDLE=TARGET …`` with MODE ``one`` (stage.verify_many) or ``each``; a
    ``-lean`` suffix turns verify.serving_figures off (parity only: Polygraphy's check). With
    ``$INNER_TIMES`` set, the seconds the stage call itself took are appended to that file."""
    from ci_onnx.contracts import proc
    from ci_onnx.contracts.target import Target
    from ci_onnx.contracts.verify_options import options_from
    from ci_onnx.runners.python import from_interpreter
    from ci_onnx.verify import stage

    mode, python, out, *pairs = argv
    lean = mode.endswith("-lean")  # the same check as Polygraphy: parity only, no serving figures
    mode = mode.removesuffix("-lean")
    items = [(Path(b), Target.from_id(t)) for b, t in (p.split("=", 1) for p in pairs)]
    env = from_interpreter(python)
    base_env = proc.child_environment(os.environ)
    options = options_from(None)
    if lean:
        options = dataclasses.replace(options, serving_figures=False)
    started = time.perf_counter()
    if mode == "one":
        found = stage.verify_many(items, Path(out), options, base_env=base_env, environment=env)
    else:
        found = [stage.verify(b, t, Path(out), options, base_env=base_env, environment=env) for b, t in items]
    inner = os.environ.get(INNER_TIMES)
    if inner:
        with open(inner, "a") as fh:
            fh.write(f"{time.perf_counter() - started!r}\n")
    bad = [
        w if isinstance(w, Exception) else w.result.summary
        for w in found
        if isinstance(w, Exception) or w.result.status.failing
    ]
    for b in bad:
        print(b, file=sys.stderr)
    return 1 if bad else 0


def cases(models: list[prepare.Prepared], python: str, work: Path, ort: str) -> dict[str, harness.Case]:
    from bench import harness, prepare
    from bench.bench_verify import polygraphy_env

    poly = str(polygraphy_env(work, ort) / "bin" / "polygraphy")
    env = {"PYTHONPATH": str(prepare.ROOT)}
    targets = [m.target.format(ort=ort) for m in models]
    full = [f"{m.bundle}={t}" for m, t in zip(models, targets, strict=True)]
    lean = [f"{m.lean_bundle}={t}" for m, t in zip(models, targets, strict=True)]
    out = work / "batch" / "out"

    def gate(mode: str, pairs: list[str], name: str, inner: Path | None = None) -> harness.Command:
        argv = (
            sys.executable,
            "-m",
            "bench.bench_verify_batch",
            "drive",
            mode,
            python,
            str(out / name),
            *pairs,
        )
        return harness.Command(argv, env={**env, INNER_TIMES: str(inner)} if inner else env)

    def bare(kind: str, specs: list[str]) -> harness.Command:
        return harness.Command((python, "-c", BARE_LOOP, str(HERE), kind, *specs))

    specs = [str(m.spec) for m in models]
    jobs_file = work / "batch" / "runner-jobs.json"
    _write_jobs(jobs_file, models, targets, out / "runner", Path(python).parent.parent)
    return {
        RUNNER_ONE: harness.Command(
            (python, "-m", "ci_onnx.observer.ort", "--jobs", str(jobs_file)), env=env
        ),
        BARE_ONE: bare("full", specs),
        BARE_EACH: _each([(python, str(BARE), s) for s in specs]),
        GATE_ONE: gate("one", full, "one", inner=inner_file(work)),
        GATE_EACH: gate("each", full, "each"),
        BARE_LEAN: bare("lean", specs),
        GATE_LEAN: gate("one-lean", lean, "lean"),
        POLY: _each([_polygraphy(poly, m) for m in models]),
    }


def inner_file(work: Path) -> Path:
    """Where the one-runner-process case's parent writes the time of its stage call, a line a run."""
    return work / "batch" / "inner-times.txt"


def _write_jobs(
    path: Path, models: list[prepare.Prepared], targets: list[str], out: Path, env_path: Path
) -> None:
    """The jobs file verify's parent writes for these targets (its arguments, untimed)."""
    from ci_onnx.contracts.target import Target
    from ci_onnx.contracts.verify_options import options_from
    from ci_onnx.observer.jobs import write_jobs
    from ci_onnx.runners.base import Launch
    from ci_onnx.runners.python import observer_args

    options = options_from(None)
    args = [
        observer_args(Launch(m.bundle, Target.from_id(t), out / t, options, "CPUExecutionProvider"), env_path)
        for m, t in zip(models, targets, strict=True)
    ]
    write_jobs(path, list(enumerate(args)))


def _polygraphy(poly: str, m: prepare.Prepared) -> tuple[str, ...]:
    """Polygraphy's check of one bundle: bench/README.md, measure 2."""
    feeds = ("--load-inputs", str(m.poly_inputs), "--load-outputs", str(m.poly_reference))
    tolerances = ("--atol", repr(m.atol), "--rtol", repr(m.rtol))
    return (poly, "run", str(m.bundle / "model.onnx"), "--onnxrt", *feeds, *tolerances)


def _each(commands: list[tuple[str, ...]]) -> harness.Case:
    """Several commands in turn, timed together; any failure stops the measure."""
    from bench import common, harness

    def run() -> None:
        for argv in commands:
            done = common.output(list(argv))
            if done.returncode != 0:
                raise harness.CaseFailed(
                    f"{' '.join(argv[:3])} … exited {done.returncode}: {done.stderr[-2000:]}"
                )

    return run


class CpuTimed:
    """A case that also records the CPU seconds (user + system) its child processes used: on a
    shared machine the wall time of every case stretches with the load, the CPU time much less."""

    def __init__(self, case: harness.Case) -> None:
        self.case = case
        self.cpu: list[float] = []

    def __call__(self) -> None:
        from bench import harness

        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        harness._once(self.case, None, None)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)


def measure(work: Path, ort: str, runs: int, warmup: int = 1) -> harness.Section:
    from bench import harness
    from ci_onnx.host import envs

    runtime = envs.ensure("onnxruntime", ort, work / "cache", uv=envs.find_uv())
    models = bundles(work)
    n = len(models)
    inner = inner_file(work)
    inner.unlink(missing_ok=True)
    timed = {name: CpuTimed(case) for name, case in cases(models, str(runtime.python), work, ort).items()}
    timings = harness.interleaved(timed, runs=runs, warmup=warmup)
    cpu = {name: harness.Timing(name, tuple(c.cpu[warmup:])) for name, c in timed.items()}
    in_run = [float(line) for line in inner.read_text().split()]
    if len(in_run) != runs + warmup:  # one line per run of the case, or the figure means nothing
        raise harness.CaseFailed(f"{inner}: {len(in_run)} stage times for {runs + warmup} runs")
    timings[GATE_IN_RUN] = harness.Timing(GATE_IN_RUN, tuple(in_run[warmup:]))
    r_run = harness.ratio(timings, GATE_IN_RUN, BARE_ONE)
    r_bare = harness.ratio(timings, GATE_ONE, BARE_ONE)
    r_each = harness.ratio(timings, GATE_EACH, BARE_ONE)
    c_bare = harness.ratio(cpu, GATE_ONE, BARE_ONE)
    per_gate = timings[GATE_LEAN].median / n
    per_poly = timings[POLY].median / n
    saved = harness.above(timings, GATE_EACH, GATE_ONE)
    child, parent = harness.above(cpu, RUNNER_ONE, BARE_ONE), harness.above(cpu, GATE_ONE, RUNNER_ONE)
    full = [BARE_ONE, BARE_EACH, RUNNER_ONE, GATE_IN_RUN, GATE_ONE, GATE_EACH]
    full_cpu = [name for name in full if name != GATE_IN_RUN]  # not a process of its own
    same = [POLY, GATE_LEAN, BARE_LEAN]
    body = (
        f"{n} targets of one environment (onnxruntime {ort}, CPU): "
        + ", ".join(f"`{m.target.format(ort=ort)}`" for m in models)
        + ".\n\n### The full work\n\nWall time:\n\n"
        + harness.table(timings, BARE_ONE, names=full)
        + "\n\nCPU time (user + system of the processes each case started):\n\n"
        + harness.table(cpu, BARE_ONE, names=full_cpu)
        + "\n\n"
        + harness.verdict(
            r_run <= 1.1,
            f"a local run verifies these {n} targets with one runner process in {r_run:.2f}× the bare "
            f"script's time doing the same work in one process; as a process of its own (the parent's "
            f"interpreter and imports too, which a run pays once) {r_bare:.2f}× ({c_bare:.2f}× its CPU "
            f"time; one runner process per target: {r_each:.2f}×; one process saves "
            f"{saved * 1000:.0f} ms, {saved / n * 1000:.0f} ms a target)",
            "≤ 1.1×",
        )
        + f"\n\nWhere the CPU time above the bare script goes: the runner process does "
        f"{child * 1000:+.0f} ms of it (the observation, every output written as a TensorProto file, "
        f"the ci_onnx modules it imports), and verify's parent process {parent * 1000:+.0f} ms (its "
        "interpreter and imports, sha256 of every bundle file, the judge, the result JSON and JUnit "
        "of each target)."
        + "\n\n### The same check as Polygraphy (parity only)\n\nWall time:\n\n"
        + harness.table(timings, POLY, names=same)
        + "\n\nCPU time:\n\n"
        + harness.table(cpu, POLY, names=same)
        + "\n\n"
        + harness.verdict(
            per_gate < per_poly,
            f"per target, onnx-gate checks in {per_gate * 1000:.0f} ms and Polygraphy in "
            f"{per_poly * 1000:.0f} ms ({per_gate / per_poly:.2f}× Polygraphy's time; CPU time "
            f"{harness.ratio(cpu, GATE_LEAN, POLY):.2f}×)",
            "onnx-gate faster, per target, in a run of several targets",
        )
    )
    return harness.Section("Verify of several targets: one runner process per environment", body)


def main(argv: list[str] | None = None) -> int:
    args_in = sys.argv[1:] if argv is None else argv
    if args_in[:1] == ["drive"]:
        return drive(args_in[1:])
    parser = argparse.ArgumentParser(prog="python -m bench.bench_verify_batch", description=__doc__)
    parser.add_argument("--runs", type=int, default=5, help="Timed runs per case (after one warm-up).")
    parser.add_argument("--work", type=Path, default=HERE / ".work")
    parser.add_argument("--ort", default="1.32.0", help="The onnxruntime release of the environment.")
    parser.add_argument("--out", type=Path, default=HERE / "BATCH.md")
    args = parser.parse_args(args_in)
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    from bench import common

    started = time.perf_counter()
    section = measure(work, args.ort, args.runs)
    text = "\n".join(
        [
            "# onnx-gate benchmarks: one runner process per environment",
            "",
            f"Measured {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC "
            f"in {time.perf_counter() - started:.0f} s with "
            f"`python -m bench.bench_verify_batch --runs {args.runs} --ort {args.ort}`.",
            "What each case does: the docstring of bench/bench_verify_batch.py.",
            "",
            *common.machine_lines(),
            "",
            section.markdown(),
        ]
    )
    print(text)
    args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
