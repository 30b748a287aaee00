"""Peak memory and temporary disk of a triage against verify.triage_memory_mb and triage_disk_mb.

    python -m bench.bench_triage_memory [--nodes 16] [--mib 16] [--limits 1024,256,100000]
    python -m bench.bench_triage_memory --config examples/minilm/onnx-gate.yml --atol 1e-6

A chain of ``nodes`` values of ``mib`` MiB each (tests/chain.py: a runtime fault planted in the
middle, a cell whose preset flushes denormals), or with ``--config`` the config's model exported
(its first bundle; ``--atol`` makes it fail, PyTorch is the triage's reference), is verified in a
fresh process without triage, then with triage at each memory limit (the disk limit the same).
Printed per run: the verify process's peak RSS, its largest child's (the triage, and the observer
under it), the peak of the temporary folder the triage writes to, the fault and node named, and
whether a limit cut the search.
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
from ci_onnx.contracts.target import Target
from ci_onnx.verify import stage
from ci_onnx.contracts.verify_options import VerifyOptions
bundle, out, limit, cfg = Path(sys.argv[1]), Path(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
manifest = json.loads((bundle / "manifest.json").read_text())
target = Target(onnxruntime.__version__, "cpu", manifest["requested_opset"], manifest["exporter"],
                session_options="default" if cfg else "ftz")
options = VerifyOptions(latency_runs=1, serving_figures=False, triage_timeout_s=600 if limit else 0,
                        triage_memory_mb=limit or 1024, triage_disk_mb=limit or 1024, triage_config=cfg)
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


def measure(bundle: Path, work: Path, limit: float, cfg: str) -> dict[str, object]:
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
    argv = [sys.executable, "-c", CHILD, str(bundle), str(work / f"out-{limit:g}"), str(limit), cfg]
    got = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=root, check=True)
    done.set()
    watcher.join()
    return {**json.loads(got.stdout.strip().splitlines()[-1]), "tmp_peak_mb": peak[0] / (1 << 20)}


def _exported(config: Path, atol: float, work: Path) -> Path:
    """The config's first bundle, exported with its tolerance's atol set to ``atol``."""
    import yaml

    data = yaml.safe_load(config.read_text())
    data["model"]["factory"] = str(config.parent / data["model"]["factory"])
    if "samples" in data["model"]:
        data["model"]["samples"] = str(config.parent / data["model"]["samples"])
    data.setdefault("verify", {}).setdefault("tolerance", {})["atol"] = atol
    (work / "onnx-gate.yml").write_text(json.dumps(data))
    argv = ["onnx-gate", "export", "--config", str(work / "onnx-gate.yml"), "--out", str(work / "bundles")]
    subprocess.run(argv, check=False, capture_output=True)
    return next(p.parent for p in sorted((work / "bundles").glob("*/manifest.json")))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=16)
    parser.add_argument("--mib", type=float, default=16)
    parser.add_argument("--limits", default="1024,256,100000")
    parser.add_argument("--config", type=Path, help="A model's onnx-gate.yml instead of the chain.")
    parser.add_argument("--atol", type=float, default=1e-6, help="With --config: the atol it fails.")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests import chain

    width = int(args.mib * (1 << 20) / 4)
    with tempfile.TemporaryDirectory(prefix="bench-triage-memory-") as tmp:
        work = Path(tmp)
        if args.config:
            bundle, cfg = _exported(args.config.resolve(), args.atol, work), str(work / "onnx-gate.yml")
            print(f"{args.config} ({bundle.name}, atol {args.atol:g})")
        else:
            bundle, cfg = chain.bundle(work / "op17-onnx", args.nodes, width, samples=1), ""
            print(f"{args.nodes} values of {args.mib:g} MiB (one sample)")
        print("| limit MB | verify peak MB | largest child peak MB | temp peak MB | named | cut |")
        print("|---|---|---|---|---|---|")
        for limit in [0.0, *(float(x) for x in args.limits.split(","))]:
            r = measure(bundle, work, limit, cfg)
            named = f"{r['fault']} `{r['node']}`" if limit else "(no triage)"
            print(
                f"| {limit or 'triage off':} | {r['self_mb']:.0f} | {r['child_mb']:.0f} | "
                f"{r['tmp_peak_mb']:.0f} | {named} | {r['cut']} |"
            )


if __name__ == "__main__":
    main()
