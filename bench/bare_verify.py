"""The baseline of the verify benchmark: the work `onnx-gate verify` does, written as a bare script.

numpy and onnxruntime only; no onnx-gate, no onnx, no protobuf. Inputs and reference outputs are read
from ``.npy`` copies made once beforehand (untimed), which is the cheapest reading there is, so the
baseline is as fast as such a script can be. Nothing is written: no observation, no result, no JUnit.

    python bare_verify.py SPEC.json [--parity-only] [--phases FILE]

``--phases FILE`` appends one JSON line of seconds per part of the work (imports, session, parity,
batch, placement, latency, memory, optimized-cache, cold-start), which tells what each part of verify costs.

SPEC.json (written by bench/prepare.py from the bundle's manifest) names the model, the data sets with
their .npy inputs and references, the outputs, atol/rtol, the decision output, the batch sizes and the
latency runs. The full work, as the runner and the judge do it:

1. one session on the CPU provider;
2. parity: each data set in one stacked run, every output compared elementwise
   (|got − ref| ≤ atol + rtol·|ref|, max abs, max rel, count out of tolerance), top-k decisions;
3. placement: the parity runs are profiled (with graph-assignment info); the assignment read,
   profiling ended, the trace read and the node events counted per provider;
4. batch sizes: the first max(sizes) samples one at a time, then each size in one run, compared;
5. latency: per working batch size, 3 warm-up runs and ``latency_runs`` timed runs, p50/p90/p99;
6. memory: 4 threads serving the largest batch (at least 5 runs each and 0.25 s) while /proc/self/statm
   is sampled every 2 ms;
7. the optimized-model cache: the optimized graph written once, session creation from the original
   and from it (five of each, interleaved, optimization off for the cached file), the parity sets run
   on it and compared;
8. cold start: a fresh interpreter imports numpy and onnxruntime, creates the session, answers one
   request and ten more (the first run against the warm ones).
"""

# ruff: noqa: E402  (the clock starts before the imports it measures)
from __future__ import annotations

import time

STARTED = time.perf_counter()

import json
import os
import resource
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort

IMPORTED = time.perf_counter()

CPU = "CPUExecutionProvider"


def compare(got: np.ndarray, ref: np.ndarray, atol: float, rtol: float) -> tuple[int, float, float]:
    g = got.astype(np.float64)
    r = ref.astype(np.float64)
    diff = np.abs(g - r)
    bad = int((diff > atol + rtol * np.abs(r)).sum() + (~np.isfinite(g) != ~np.isfinite(r)).sum())
    nonzero = r != 0
    rel = np.where(nonzero, diff / np.where(nonzero, np.abs(r), 1.0), 0.0)
    return bad, float(diff.max(initial=0.0)), float(rel.max(initial=0.0))


def run(sess: Any, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, feeds), strict=True))


def first(feeds: dict[str, np.ndarray], n: int) -> dict[str, np.ndarray]:
    return {k: np.take(v, np.arange(n) % v.shape[0], axis=0) for k, v in feeds.items()}


def rss_mb() -> float:
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * resource.getpagesize() / (1 << 20)


def peak_rss(fn: Any, threads: int = 4, runs_each: int = 5, min_s: float = 0.25) -> float:
    deadline = time.monotonic() + min_s

    def serve() -> None:
        done = 0
        while done < runs_each or time.monotonic() < deadline:
            fn()
            done += 1

    workers = [threading.Thread(target=serve) for _ in range(threads)]
    peak = rss_mb()
    for w in workers:
        w.start()
    while any(w.is_alive() for w in workers):
        peak = max(peak, rss_mb())
        time.sleep(0.002)
    return peak


class Phases:
    def __init__(self) -> None:
        self.seconds = {"imports": IMPORTED - STARTED}
        self._last = time.perf_counter()

    def __call__(self, name: str) -> None:
        now = time.perf_counter()
        self.seconds[name] = now - self._last
        self._last = now


def main(spec_path: str, parity_only: bool, phases_file: str = "") -> int:
    phase = Phases()
    code = _work(spec_path, parity_only, phase)
    if phases_file:
        with open(phases_file, "a") as f:
            f.write(json.dumps(phase.seconds) + "\n")
    return code


def _work(spec_path: str, parity_only: bool, phase: Phases) -> int:
    spec = json.loads(Path(spec_path).read_text())
    base = Path(spec_path).parent
    model, atol, rtol = spec["model"], spec["atol"], spec["rtol"]
    so = ort.SessionOptions()
    so.log_severity_level = 3
    if not parity_only:  # the parity runs are profiled, to learn placement, as verify's runner does
        so.enable_profiling = True
        so.profile_file_prefix = str(base / f"bare-profile-{os.getpid()}")
        so.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    sess = ort.InferenceSession(model, so, providers=[CPU])
    assert CPU in sess.get_providers()
    phase("session")
    sets = [
        ({k: np.load(base / f) for k, f in ds["inputs"].items()}, ds["outputs"]) for ds in spec["data_sets"]
    ]
    failures = 0
    for feeds, refs in sets:
        got = run(sess, feeds)
        for name, ref_file in refs.items():
            ref = np.load(base / ref_file)
            failures += compare(got[name], ref, atol, rtol)[0] > 0
            if name == spec.get("decision"):
                failures += int((got[name].argmax(-1) != ref.argmax(-1)).sum())
    phase("parity")
    if parity_only:
        return 1 if failures else 0
    if hasattr(sess, "get_provider_graph_assignment_info"):
        [n.op_type for sub in sess.get_provider_graph_assignment_info() for n in sub.get_nodes()]
    trace = Path(sess.end_profiling())
    per_provider: dict[str, float] = {}
    for e in json.loads(trace.read_text()):
        if e.get("cat") == "Node":
            p = e.get("args", {}).get("provider", "")
            per_provider[p] = per_provider.get(p, 0.0) + float(e.get("dur", 0))
    trace.unlink()
    phase("placement")

    sizes = sorted(spec["batch_sizes"])
    samples = first(sets[0][0], max(sizes))
    singles = [run(sess, {k: v[i : i + 1] for k, v in samples.items()}) for i in range(max(sizes))]
    single = {k: np.concatenate([s[k] for s in singles]) for k in singles[0]}
    for n in sizes:
        for name, value in run(sess, first(samples, n)).items():
            failures += compare(value, single[name][:n], atol, rtol)[0] > 0
    phase("batch")

    runs = spec["latency_runs"]
    for n in sizes:
        feeds = first(sets[0][0], n)
        for _ in range(3):
            sess.run(None, feeds)
        times = []
        for _ in range(runs):
            t = time.perf_counter()
            sess.run(None, feeds)
            times.append(time.perf_counter() - t)
        np.percentile(np.array(times), [50, 90, 99])
    phase("latency")
    largest = first(sets[0][0], max(sizes))
    peak_rss(lambda: sess.run(None, largest), runs_each=max(2, runs // 4))
    phase("memory")
    sess = None  # as verify's runner does: an idle session's threads compete with what is timed next

    failures += optimized_cache(model, base, sets, atol, rtol)
    phase("optimized-cache")
    cold_start(model, first(sets[0][0], 1))
    phase("cold-start")
    return 1 if failures else 0


def optimized_cache(model: str, base: Path, sets: list[Any], atol: float, rtol: float) -> int:
    """What verify's optimized-model cache does: write the optimized graph once, time session creation
    from the original and from the cached file (five of each, interleaved), run the parity sets on it."""
    cached = base / f"bare-optimized-{os.getpid()}.onnx"
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.optimized_model_filepath = str(cached)
    ort.InferenceSession(model, so, providers=[CPU])
    plain = ort.SessionOptions()
    plain.log_severity_level = 3
    off = ort.SessionOptions()
    off.log_severity_level = 3
    off.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    times: list[float] = []
    sess = None
    for _ in range(5):
        for path, opts in ((model, plain), (str(cached), off)):
            sess = None  # one session alive at a time, as verify's probe keeps them
            t = time.perf_counter()
            sess = ort.InferenceSession(path, opts, providers=[CPU])
            times.append(time.perf_counter() - t)
    failures = 0
    for feeds, refs in sets:
        got = run(sess, feeds)
        failures += sum(compare(got[name], np.load(base / f), atol, rtol)[0] > 0 for name, f in refs.items())
    cached.unlink()
    return failures


COLD = (
    "import time, sys; t = time.perf_counter(); import numpy as np, onnxruntime as ort; "
    "s = ort.InferenceSession(sys.argv[1], providers=['CPUExecutionProvider']); "
    "f = dict(np.load(sys.argv[2])); s.run(None, f); [s.run(None, f) for _ in range(10)]"
)


def cold_start(model: str, feeds: dict[str, np.ndarray]) -> None:
    """What verify's cold-start figure does: a fresh interpreter imports, creates, answers once."""
    import subprocess
    import tempfile

    with tempfile.NamedTemporaryFile(suffix=".npz") as f:
        np.savez(f, **feeds)
        f.flush()
        subprocess.run([sys.executable, "-c", COLD, model, f.name], check=True)


if __name__ == "__main__":
    args = sys.argv[1:]
    phases = args[args.index("--phases") + 1] if "--phases" in args else ""
    sys.exit(main(args[0], "--parity-only" in args, phases))
