"""Peak memory and temporary disk of a triage against verify.triage_memory_mb and triage_disk_mb.

    python -m bench.bench_triage_memory [--nodes 16] [--mib 16] [--limits 1024,256,100000]

A chain of ``nodes`` values of ``mib`` MiB each (tests/chain.py: a runtime fault planted in the
middle, a cell whose preset flushes denormals) is verified in a fresh process without triage, then
with triage at each memory limit (the disk limit the same). Printed per run: the verify process's
peak RSS, its largest child's (the triage, and the observer under it), the peak of the temporary
folder the triage writes to, the fault and node named, and whether a limit cut the search.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

CHILD = """
import json, resource, sys
from pathlib import Path
import onnxruntime
from ci_onnx.target import Target
from ci_onnx.verify import stage
from ci_onnx.verify_options import VerifyOptions
bundle, out, limit = Path(sys.argv[1]), Path(sys.argv[2]), float(sys.argv[3])
target = Target(onnxruntime.__version__, "cpu", 17, "onnx", session_options="ftz")
options = VerifyOptions(latency_runs=1, serving_figures=False, triage_timeout_s=600 if limit else 0,
                        triage_memory_mb=limit or 1024, triage_disk_mb=limit or 1024)
import os
env = {"TMPDIR": os.environ["TMPDIR"]}
r = stage.verify(bundle, target, out, options, python=sys.executable, base_env=env).result
t = r.triage
print(json.dumps({
    "self_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "child_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
    "status": r.status.value,
    "fault": t.fault if t else None, "node": t.node if t else None,
    "cut": any("cut the search short" in n for n in t.notes) if t else False,
    "triage_s": t.duration_s if t else 0.0,
}))
"""


def _du(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            with contextlib.suppress(OSError):  # a file the triage removed meanwhile
                total += os.lstat(os.path.join(root, f)).st_size
    return total


def measure(bundle: Path, work: Path, limit: float) -> dict[str, object]:
    tmp = work / f"tmp-{limit:g}"
    tmp.mkdir(parents=True)
    peak = [0]
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _du(tmp))
            time.sleep(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    env = {**os.environ, "TMPDIR": str(tmp)}
    root = Path(__file__).resolve().parents[1]
    argv = [sys.executable, "-c", CHILD, str(bundle), str(work / f"out-{limit:g}"), str(limit)]
    got = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=root, check=True)
    done.set()
    watcher.join()
    return {**json.loads(got.stdout.strip().splitlines()[-1]), "tmp_peak_mb": peak[0] / (1 << 20)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=16)
    parser.add_argument("--mib", type=float, default=16)
    parser.add_argument("--limits", default="1024,256,100000")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests import chain

    width = int(args.mib * (1 << 20) / 4)
    with tempfile.TemporaryDirectory(prefix="bench-triage-memory-") as tmp:
        work = Path(tmp)
        bundle = chain.bundle(work / "op17-onnx", args.nodes, width, samples=1)
        print(f"{args.nodes} values of {args.mib:g} MiB (one sample)")
        print("| limit MB | verify peak MB | largest child peak MB | temp peak MB | named | cut |")
        print("|---|---|---|---|---|---|")
        for limit in [0.0, *(float(x) for x in args.limits.split(","))]:
            r = measure(bundle, work, limit)
            named = f"{r['fault']} `{r['node']}`" if limit else "(no triage)"
            print(
                f"| {limit or 'triage off':} | {r['self_mb']:.0f} | {r['child_mb']:.0f} | "
                f"{r['tmp_peak_mb']:.0f} | {named} | {r['cut']} |"
            )


if __name__ == "__main__":
    main()
