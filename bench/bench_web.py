"""The web runner's overhead per target (browser start, page load, wasm compile) against the bare work.

    python -m bench.bench_web [--runs N] [--release 1.29.0] [--work DIR] [--write bench/WEB.md]

On the example CNN's op17-dynamo bundle (made once with the real `onnx-gate export`), the web
runner's driver (`node ci_onnx/runners/web/drive.mjs`, what verify launches) runs each target (wasm,
wasmmt, webgpu) in turn, interleaved (wasm, wasmmt, webgpu, wasm, …) after one warm-up round. Each
run is timed from outside (the wall clock of the driver: browser start to browser closed) and the
page reports its phases (web_timings.json). The bare work is what a page that already had a browser,
a page and a compiled onnxruntime would do: create the session, run the test data sets, the served
batch sizes and the latency runs. The overhead is everything else; the ratio is wall / bare work,
medians of the runs. The onnxruntime-web install is provisioned once, untimed.

Per run: a group of cells as `onnx-gate run` launches them (WebRunner.launch_many: one driver and one
browser per flag set, a fresh context and page per cell) against the same cells each in a browser of
its own (WebRunner.launch, the per-cell path), interleaved in the same rounds; wall clock of the whole
group from outside, medians, ratio per-cell / shared. Two groups: four wasm cells (wasm, wasmmt,
wasm, wasmmt: what two exporters give; one browser against four) and the three providers (wasm,
wasmmt, webgpu: webgpu needs other flags, so two browsers against three).

    python -m bench.bench_web --minilm [--runs N] [--release 1.29.0] [--write bench/WEB.md]

Where a MiniLM cell's time goes: on the all-MiniLM-L6-v2 example's bundle (examples/minilm, made
once with `onnx-gate export`), the driver runs a wasm and a webgpu cell in turn, interleaved, with
the e2e test's latency_runs (3). From web_timings.json: the cell's phases, every session.run by phase
and rows (its median per run, webgpu / wasm as the ratio, both measured in the same rounds), and the
console lines logged after the page's RUNS_BEGIN marker (during the runs). --write replaces only its
own section of the file.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench import common
from bench.bench_node import bundle

if TYPE_CHECKING:
    from ci_onnx.runners.base import Launch, RunnerEnv

PROVIDERS = ("wasm", "wasmmt", "webgpu")
GROUPS = (
    ("4 wasm cells", ("wasm", "wasmmt", "wasm", "wasmmt")),
    ("wasm + wasmmt + webgpu", ("wasm", "wasmmt", "webgpu")),
)
PHASES = (
    ("browser start", "browser_start_ms"),
    ("page load", "page_load_ms"),
    ("onnxruntime import", "import_ms"),
    ("wasm compile + first session", "compile_ms"),
    ("memory measurement", "memory_ms"),
)
BARE = (
    ("session", "session_create_ms"),
    ("parity", "parity_ms"),
    ("batches", "batch_ms"),
    ("latency", "latency_ms"),
)


def once(argv: list[str], out: Path) -> dict[str, float]:
    """One run of the driver: the page's phases, the bare work and the wall clock, in ms."""
    from ci_onnx.contracts import proc

    if out.exists():
        import shutil

        shutil.rmtree(out)
    t0 = time.perf_counter()
    done = proc.run(argv, timeout=600, env=os.environ, what="web runner")
    wall = (time.perf_counter() - t0) * 1000
    if not done.ok:
        raise SystemExit(f"bench_web: the web runner failed, {done.describe_failure()}")
    t = json.loads((out / "web_timings.json").read_text())
    t["compile_ms"] = t["first_session_ms"]  # the first session compiles the wasm module (and logs)
    bare = sum(t[key] for _, key in BARE)
    phases = {key: t[key] for _, key in PHASES}
    return {**phases, "rest_ms": wall - bare - sum(phases.values()), "bare_ms": bare, "wall_ms": wall}


def group_once(env: RunnerEnv, cells: list[Launch], *, shared: bool) -> float:
    """One group's wall clock in ms: through launch_many (shared) or one launch per cell (alone)."""
    import shutil

    from ci_onnx.contracts import proc
    from ci_onnx.runners import web

    for x in cells:
        shutil.rmtree(x.out_dir, ignore_errors=True)
        x.out_dir.mkdir(parents=True)
    environ = proc.child_environment(os.environ)
    t0 = time.perf_counter()
    if shared:
        done = web.RUNNER.launch_many(env, cells, base_env=environ)
    else:
        done = [web.RUNNER.launch(env, x, base_env=environ) for x in cells]
    wall = (time.perf_counter() - t0) * 1000
    for x, d in zip(cells, done, strict=True):
        if not d.ok:
            raise SystemExit(f"bench_web: {x.target.id} failed, {d.describe_failure()}")
    return wall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_web", description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--release", default="1.29.0")
    parser.add_argument("--work", type=Path, default=Path(__file__).resolve().parent / ".work" / "web")
    parser.add_argument("--write", type=Path, help="also write the table as Markdown to this file")
    parser.add_argument("--minilm", action="store_true", help="where a MiniLM cell's time goes")
    args = parser.parse_args(argv)
    if args.minilm:
        return minilm(args)
    from ci_onnx.contracts import proc
    from ci_onnx.contracts.bundle import read_manifest
    from ci_onnx.contracts.target import Target
    from ci_onnx.contracts.verify_options import VerifyOptions
    from ci_onnx.runners import base, web

    work = args.work.resolve()
    b = bundle(work)
    sizes = sorted(read_manifest(b).batch_sizes)
    how = base.Provisioning(work / "cache", proc.child_environment(os.environ))
    options = VerifyOptions(latency_runs=common.LATENCY_RUNS)
    browser = web.chromium(os.environ)
    argvs: dict[str, list[str]] = {}
    for p in PROVIDERS:
        target = Target(args.release, p, 17, "dynamo", runner="web")
        env = base.provision(target, how)
        argvs[p] = web.argv(env, browser, work / "profile" / p, b, target, work / "obs" / p, options, sizes)
    env = base.provision(Target(args.release, "wasm", 17, "dynamo", runner="web"), how)
    groups = {
        name: [
            base.Launch(
                b,
                Target(args.release, p, 17, "dynamo", runner="web"),
                work / "group" / name.split()[0] / f"{j}-{p}",
                options,
                "",
            )
            for j, p in enumerate(providers)
        ]
        for name, providers in GROUPS
    }
    runs: dict[str, list[dict[str, float]]] = {p: [] for p in PROVIDERS}
    per_run: dict[str, dict[str, list[float]]] = {name: {"alone": [], "shared": []} for name in groups}
    for i in range(args.runs + 1):  # round 0 warms the disk cache and is dropped
        for p in PROVIDERS:
            with web.fresh_profile() as profile:
                cmd = [str(profile) if a == str(work / "profile" / p) else a for a in argvs[p]]
                got = once(cmd, work / "obs" / p)
            if i:
                runs[p].append(got)
        for name, launches in groups.items():
            for way in ("alone", "shared") if i % 2 else ("shared", "alone"):
                ms = group_once(env, launches, shared=way == "shared")
                if i:
                    per_run[name][way].append(ms)
    med = {p: {k: statistics.median(r[k] for r in runs[p]) for k in runs[p][0]} for p in PROVIDERS}
    lines = [
        f"# Web runner overhead, onnxruntime-web {args.release}, example CNN, {args.runs} interleaved runs",
        "",
        "Generated by `python -m bench.bench_web`; medians in ms. Bare work: session creation, the test data",
        "sets, the served batch sizes and the latency runs, as a page with a browser, a page and a compiled",
        "onnxruntime would do them. Overhead: the wall clock of the driver less the bare work.",
        "",
        *common.machine_lines(),
        "",
        "| target | "
        + " | ".join(name for name, _ in PHASES)
        + " | rest (node, playwright, close) | bare work | wall | overhead | wall / bare |",
        "|---" * (len(PHASES) + 6) + "|",
    ]
    for p in PROVIDERS:
        m = med[p]
        overhead = m["wall_ms"] - m["bare_ms"]
        cells = [f"{m[key]:.0f}" for _, key in PHASES] + [
            f"{overhead - sum(m[key] for _, key in PHASES):.0f}"
        ]
        ratio = m["wall_ms"] / m["bare_ms"]
        lines.append(
            f"| web-{p} | "
            + " | ".join(cells)
            + f" | {m['bare_ms']:.0f} | {m['wall_ms']:.0f} | {overhead:.0f} | "
            f"{ratio:.1f}× |"
        )
    lines += [
        "",
        "## Per run: one browser per flag set for a group of cells, against one browser per cell",
        "",
        "The wall clock of the whole group (driver, browsers, every cell's work), medians in ms.",
        "",
        "| group | cells | browsers shared | browsers alone | one per cell | shared | saved "
        "| alone / shared |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, providers in GROUPS:
        alone, shared = (statistics.median(per_run[name][w]) for w in ("alone", "shared"))
        flag_sets = len({web.flag_set(p) for p in providers})
        lines.append(
            f"| {name} | {len(providers)} | {flag_sets} | {len(providers)} | {alone:.0f} | {shared:.0f} | "
            f"{alone - shared:.0f} | {alone / shared:.2f}× |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    if args.write:
        write_section(args.write, None, text)
    return 0


MINILM_SECTION = "## MiniLM: where a cell's time goes"
MINILM_LATENCY_RUNS = 3
"""What tests/e2e/test_web_runner.py's MiniLM test uses."""
MINILM_PROVIDERS = ("wasm", "webgpu")
RUN_PHASES = ("parity", "single", "batch", "warmup", "latency")


def write_section(path: Path, heading: str | None, text: str) -> None:
    """Write ``text`` as the part of ``path`` under ``heading`` (None: the part before the MiniLM
    section), keeping the other part as it is."""
    old = path.read_text() if path.is_file() else ""
    head, _, tail = old.partition(MINILM_SECTION)
    tail = MINILM_SECTION + tail if tail else ""
    if heading is None:
        path.write_text(text + ("\n" + tail if tail else ""))
    else:
        path.write_text((head.rstrip("\n") + "\n\n" if head.strip() else "") + text)


def minilm_bundle(work: Path) -> Path:
    out = work / "minilm" / "bundles"
    b = out / "op18-dynamo"
    if not (b / "manifest.json").is_file():
        here = Path(__file__).resolve().parent.parent / "examples" / "minilm"
        offline = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        common.check_call(
            [sys.executable, "-m", "ci_onnx", "export", "--config", "onnx-gate.yml", "--out", str(out)],
            env=offline,
            cwd=here,
        )
    return b


def cell_once(argv: list[str], out: Path) -> dict[str, Any]:
    """One cell through the driver: its wall clock, the page's phases and runs, the runs' console."""
    import shutil

    from ci_onnx.contracts import proc
    from ci_onnx.runners import web

    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    done = proc.run(argv, timeout=1800, env=os.environ, what="web runner")
    wall = (time.perf_counter() - t0) * 1000
    if not done.ok:
        raise SystemExit(f"bench_web: the web runner failed, {done.describe_failure()}")
    t = json.loads((out / web.TIMINGS).read_text())
    log = (out / web.PLACEMENT.verbose_log).read_text()
    if web.RUNS_BEGIN not in log:
        raise SystemExit(f"bench_web: the page logged no {web.RUNS_BEGIN!r} line")
    during = [line for line in log.split(web.RUNS_BEGIN, 1)[1].splitlines() if line.strip()]
    return {"wall_ms": wall, "timings": t, "console_during_runs": len(during)}


def minilm(args: argparse.Namespace) -> int:
    from ci_onnx.contracts import proc
    from ci_onnx.contracts.bundle import read_manifest
    from ci_onnx.contracts.target import Target
    from ci_onnx.contracts.verify_options import VerifyOptions
    from ci_onnx.runners import base, web

    work = args.work.resolve()
    b = minilm_bundle(work)
    sizes = sorted(read_manifest(b).batch_sizes)
    how = base.Provisioning(work / "cache", proc.child_environment(os.environ))
    options = VerifyOptions(latency_runs=MINILM_LATENCY_RUNS)
    browser = web.chromium(os.environ)
    got: dict[str, list[dict[str, Any]]] = {p: [] for p in MINILM_PROVIDERS}
    for i in range(args.runs):
        for p in MINILM_PROVIDERS if i % 2 == 0 else MINILM_PROVIDERS[::-1]:
            target = Target(args.release, p, 18, "dynamo", runner="web")
            env = base.provision(target, how)
            out = work / "minilm" / "obs" / p
            with web.fresh_profile() as profile:
                got[p].append(cell_once(web.argv(env, browser, profile, b, target, out, options, sizes), out))

    def per_run(p: str, phase: str, rows: int) -> list[float]:
        return [ms for r in got[p] for ph, n, ms in r["timings"]["runs"] if ph == phase and n == rows]

    first = {p: statistics.median(r["timings"]["runs"][0][2] for r in got[p]) for p in MINILM_PROVIDERS}
    first_rows = got[MINILM_PROVIDERS[0]][0]["timings"]["runs"][0][1]
    counts = {ph: 0 for ph in RUN_PHASES}
    for ph, _, _ in got[MINILM_PROVIDERS[0]][0]["timings"]["runs"]:
        counts[ph] += 1
    lines = [
        MINILM_SECTION,
        "",
        "Generated by `python -m bench.bench_web --minilm`: all-MiniLM-L6-v2 (examples/minilm, "
        f"op18-dynamo), "
        f"onnxruntime-web {args.release}, {args.runs} interleaved runs of each cell, latency_runs "
        f"{MINILM_LATENCY_RUNS}; medians in ms.",
        "",
        *common.machine_lines(),
        "",
        "Runs per cell: "
        + ", ".join(f"{ph} {n}" for ph, n in counts.items())
        + f" ({sum(counts.values())} in all; warmup: {counts['warmup'] // max(len(sizes), 1)} per served "
        "batch size, as the python runner's).",
        "",
        "| per session.run | " + " | ".join(f"web-{p}" for p in MINILM_PROVIDERS) + " | webgpu / wasm |",
        "|---|---|---|---|",
        f"| first run of the session ({first_rows} rows; on webgpu its shaders compile) | "
        + " | ".join(f"{first[p]:.0f}" for p in MINILM_PROVIDERS)
        + f" | {first['webgpu'] / first['wasm']:.0f}× |",
    ]
    for rows in sizes:
        med = {p: statistics.median(per_run(p, "latency", rows)) for p in MINILM_PROVIDERS}
        lines.append(
            f"| steady run, batch {rows} | "
            + " | ".join(f"{med[p]:.0f}" for p in MINILM_PROVIDERS)
            + f" | {med['webgpu'] / med['wasm']:.0f}× |"
        )
    lines += [
        "",
        "| per cell | " + " | ".join(f"web-{p}" for p in MINILM_PROVIDERS) + " |",
        "|---|---|---|",
    ]
    for label, key in (
        ("first session (verbose log; compiles wasm)", "first_session_ms"),
        ("observed session", "session_create_ms"),
        ("parity", "parity_ms"),
        ("batches (singles + served sizes)", "batch_ms"),
        ("latency (warmup + timed)", "latency_ms"),
    ):
        vals = {p: statistics.median(r["timings"][key] for r in got[p]) for p in MINILM_PROVIDERS}
        lines.append(f"| {label} | " + " | ".join(f"{vals[p]:.0f}" for p in MINILM_PROVIDERS) + " |")
    warm = counts["warmup"] // max(len(sizes), 1)  # page.mjs's per served size
    steady = {p: sum(statistics.median(per_run(p, "latency", n)) for n in sizes) for p in MINILM_PROVIDERS}
    lines.append(
        f"| latency at verify's default latency_runs ({common.LATENCY_RUNS}), from the steady runs | "
        + " | ".join(f"{(warm + common.LATENCY_RUNS) * steady[p]:.0f}" for p in MINILM_PROVIDERS)
        + " |"
    )
    walls = {p: statistics.median(r["wall_ms"] for r in got[p]) for p in MINILM_PROVIDERS}
    lines.append(
        "| wall clock of the cell | " + " | ".join(f"{walls[p]:.0f}" for p in MINILM_PROVIDERS) + " |"
    )
    quiet = {p: max(r["console_during_runs"] for r in got[p]) for p in MINILM_PROVIDERS}
    lines.append(
        "| console lines during the runs (most of any run) | "
        + " | ".join(str(quiet[p]) for p in MINILM_PROVIDERS)
        + " |"
    )
    text = "\n".join(lines) + "\n"
    print(text)
    if args.write:
        write_section(args.write, MINILM_SECTION, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
