"""How the triage observes the target: in the target's own environment, through the python kind's
triage observer (ci_onnx.observer.triage: optimization levels, the saved optimized graph) or through
another kind's own runner (node, native, web), which runs a bundle made for the purpose: the exposed
graph with the triaged sample as its only test data set, every value declared as an output."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ci_onnx.contracts import proc
from ci_onnx.contracts.bundle import MODEL, Manifest, TensorSpec, TestDataSet
from ci_onnx.observer import triage as triage_observer
from ci_onnx.triage import graph
from ci_onnx.triage.request import Budget, Request, Stop

OPTIMIZED = "optimized.onnx"


def _python(
    req: Request, work: Path, name: str, runs: Sequence[dict[str, Any]], budget: Budget
) -> dict[str, Any]:
    """The runs, by the triage observer in the target's environment; what each did by its ``out``."""
    from ci_onnx.runners.python import package_path

    job_path, report = work / f"{name}.json", work / f"{name}-report.json"
    job = {"providers": list(req.providers), "preset": req.preset, "runs": list(runs), "report": str(report)}
    job_path.write_text(json.dumps(job))
    with package_path() as path:
        env = {**req.base_env, "PYTHONPATH": path, "PYTHONDONTWRITEBYTECODE": "1"}
        argv = [req.python, "-m", "ci_onnx.observer.triage", str(job_path)]
        done = proc.run(argv, timeout=budget.left(), env=env, what=f"{req.target.id} triage")
    if not done.ok or not report.is_file():
        raise Stop(f"the target's runtime failed while triaging: {done.describe_failure()}")
    ran: dict[str, Any] = json.loads(report.read_text())["runs"]
    return ran


def _kind(req: Request, bundle: Path, out: Path, budget: Budget) -> dict[str, dict[str, np.ndarray]]:
    """``bundle`` observed by the target's own runner kind: each test data set's outputs."""
    from ci_onnx.contracts import tensorproto
    from ci_onnx.contracts.verify_options import VerifyOptions
    from ci_onnx.runners import base

    runner = base.get(req.kind)
    env = base.RunnerEnv(req.kind, req.release, Path(req.env_path), req.python, req.env_package)
    options = VerifyOptions(latency_runs=1, serving_figures=False, timeout_s=budget.left())
    out.mkdir(parents=True, exist_ok=True)
    launch = base.Launch(bundle, req.target, out, options, req.providers[0])
    done = runner.launch(env, launch, base_env=req.base_env)
    if not done.ok:
        raise Stop(f"the {req.kind} runner failed while triaging: {done.describe_failure()}")
    obs = runner.collect(out)
    if obs.load_error:
        raise Stop(f"the {req.kind} runner could not load the graph: {obs.load_error[:300]}")
    return {
        ds: {name: tensorproto.load_tensor(out / rel).array for name, rel in files.items()}
        for ds, files in obs.outputs.items()
    }


def as_run(
    req: Request, manifest: Manifest, sets: dict[str, Path], work: Path, budget: Budget
) -> dict[str, np.ndarray]:
    """The target's failing output on each test data set (``sets``: directory → its inputs written by
    triage_observer.write_values), as the cell ran it. The python kind also saves the graph it optimized."""
    if req.kind != "python":
        got = _kind(req, req.bundle, work / "as-run", budget)
        return {ds: v[req.output] for ds, v in got.items() if req.output in v}
    runs: list[dict[str, Any]] = []
    for i, (ds, inputs) in enumerate(sets.items()):
        run: dict[str, Any] = {
            "model": str(req.bundle / MODEL), "inputs": str(inputs), "out": str(work / f"as-run{i}"),
            "outputs": [req.output], "set": ds,
        }  # fmt: skip
        if i == 0:
            run["save_optimized"] = str(work / OPTIMIZED)
        runs.append(run)
    ran = _python(req, work, "as-run", runs, budget)
    return {
        r["set"]: triage_observer.read_values(Path(r["out"]))[req.output]
        for r in runs
        if "error" not in ran.get(r["out"], {})
    }


def exposed(
    req: Request,
    models: dict[str, Any],
    manifest: Manifest,
    work: Path,
    sample: dict[str, np.ndarray],
    budget: Budget,
    only: dict[str, Any] | None = None,
) -> dict[str, dict[str, np.ndarray] | str]:
    """Every value of each of ``models`` (by name; those ``only[name]`` names where it names any) on
    the sample, as the target computes it (with graph optimizations off where the kind can say so;
    the python kind runs them all in one child), or the runtime's message where it cannot run one."""
    only = only or {}
    if req.kind != "python":
        found: dict[str, dict[str, np.ndarray] | str] = {}
        for name, model in models.items():
            bundle = _exposed_bundle(
                graph.expose(model, only=only.get(name)), manifest, sample, work / f"{name}-bundle"
            )
            try:
                found[name] = _kind(req, bundle, work / f"{name}-values", budget).get("test_data_set_0", {})
            except Stop as exc:
                found[name] = str(exc)
        return found
    triage_observer.write_values(work / "exposed-inputs", sample)
    runs = {
        name: {
            "model": str(graph.save(graph.expose(model, only=only.get(name)), work / f"{name}.onnx")),
            "inputs": str(work / "exposed-inputs"),
            "out": str(work / f"{name}-values"),
            "level": "disable",
        }
        for name, model in models.items()
    }
    ran = _python(req, work, "exposed", list(runs.values()), budget)
    return {
        name: str(ran.get(run["out"], {}).get("error") or "") or triage_observer.read_values(Path(run["out"]))
        for name, run in runs.items()
    }


def optimized_graph(work: Path) -> Path | None:
    """The graph the python kind's runtime optimized for the cell, where it saved one."""
    path = work / OPTIMIZED
    return path if path.is_file() else None


def _exposed_bundle(model: Any, manifest: Manifest, sample: dict[str, np.ndarray], where: Path) -> Path:
    """A bundle for a kind's runner: the exposed graph, the sample as test_data_set_0, every output
    declared (its element type from the graph)."""
    import onnx

    from ci_onnx.contracts import bundle, tensorproto

    graph.save(model, where / MODEL)
    data = where / "test_data_set_0"
    data.mkdir(parents=True, exist_ok=True)
    for i, spec in enumerate(manifest.inputs):
        tensorproto.save(data / f"input_{i}.pb", np.asarray(sample[spec.name]), spec.name)
    outputs = []
    for o in model.graph.output:
        elem = o.type.tensor_type.elem_type if o.type.HasField("tensor_type") else 0
        dtype = onnx.helper.tensor_dtype_to_np_dtype(elem).name if elem else "float32"
        outputs.append(TensorSpec(o.name, (), dtype))
    made = dataclasses.replace(
        manifest,
        outputs=tuple(outputs),
        test_data_sets=(TestDataSet("test_data_set_0", "random", 1),),
        batch_sizes=(),
        files={},
    )
    bundle.write_manifest(where, dataclasses.replace(made, files=bundle.hash_files(where)))
    return where
