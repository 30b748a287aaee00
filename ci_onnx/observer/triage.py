"""Triage's observer: runs INSIDE the target's environment (numpy and its onnxruntime, nothing else).

``python -m ci_onnx.observer.triage JOB.json`` runs each model the job names on the inputs it names,
with the target's provider and session settings (its preset, its arithmetic), graph optimizations at
the level the run asks for, and writes every output the session returns as a TensorProto file plus
``index.json`` (output name → file). It can also save the graph the runtime optimized, so that the
graph the target really ran is observed too. It compares nothing: the triage does, on its side.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

INDEX = "index.json"


def write_values(directory: Path, arrays: Mapping[str, Any]) -> None:
    """``arrays`` (name → numpy array) as ``v<i>.pb`` files and their index."""
    from ci_onnx.contracts import tensorproto

    directory.mkdir(parents=True, exist_ok=True)
    index = {}
    for i, (name, arr) in enumerate(arrays.items()):
        rel = f"v{i}.pb"
        tensorproto.save(directory / rel, arr, name)
        index[name] = rel
    (directory / INDEX).write_text(json.dumps(index))


def read_values(directory: Path) -> dict[str, Any]:
    """What :func:`write_values` wrote: name → numpy array (bits for the types numpy lacks)."""
    from ci_onnx.contracts import tensorproto

    index = json.loads((directory / INDEX).read_text())
    return {name: tensorproto.load_tensor(directory / rel).array for name, rel in index.items()}


def _session(ort: Any, model: str, job: Mapping[str, Any], run: Mapping[str, Any]) -> Any:
    from ci_onnx.observer import session

    so = session.apply(ort, ort.SessionOptions(), job.get("preset", {}))
    so.log_severity_level = 3
    level = run.get("level", "")
    if level:
        so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, session.LEVELS[level])
    if run.get("save_optimized"):
        so.optimized_model_filepath = str(run["save_optimized"])
    return ort.InferenceSession(model, so, providers=list(job["providers"]))


def run_job(job: Mapping[str, Any]) -> dict[str, Any]:
    """Every run of ``job``; what each did (seconds, or the runtime's message) by its ``out``."""
    import numpy as np
    import onnxruntime as ort

    done: dict[str, Any] = {"runtime_version": ort.__version__, "runs": {}}
    for run in job["runs"]:
        t0 = time.monotonic()
        try:
            sess = _session(ort, str(run["model"]), job, run)
            feeds = read_values(Path(run["inputs"]))
            names = [o.name for o in sess.get_outputs()]
            wanted = set(run.get("outputs") or names)
            got = sess.run([n for n in names if n in wanted], {k: np.asarray(v) for k, v in feeds.items()})
            write_values(Path(run["out"]), dict(zip([n for n in names if n in wanted], got, strict=True)))
            done["runs"][run["out"]] = {"seconds": round(time.monotonic() - t0, 3)}
        except Exception as exc:  # the runtime's own message is the evidence; the triage says it stopped
            done["runs"][run["out"]] = {"error": f"{type(exc).__name__}: {str(exc).strip()[:600]}"}
        finally:
            sess = None
    return done


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m ci_onnx.observer.triage JOB.json", file=sys.stderr)
        return 2
    job_path = Path(args[0])
    job = json.loads(job_path.read_text())
    done = run_job(job)
    Path(job["report"]).write_text(json.dumps(done))
    return 0


if __name__ == "__main__":
    sys.exit(main())
