"""One triage, end to end: pick the failing sample, run the references, walk, classify, reproduce.

The target's runtime runs in the target's own environment (ci_onnx.triage.observe, with that
environment's interpreter: the host's onnxruntime may be another release), PyTorch in a child of
its own where torch is installed (ci_onnx.triage.torchref), onnx's ReferenceEvaluator here. Every
failure becomes the Triage's ``stopped`` reason, never an exception that reaches the verdict.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ci_onnx import proc
from ci_onnx.bundle import MODEL, Manifest, read_manifest
from ci_onnx.target import Target
from ci_onnx.triage import classify, graph, observe, repro, walk
from ci_onnx.triage.contract import TRIAGE_VERSION, Triage

TRIAGE_DIR = "triage"


@dataclasses.dataclass(frozen=True)
class Request:
    bundle: Path
    target: Target
    check: str
    """``parity[<output>]`` or ``decision``."""
    output: str
    out_dir: Path
    """The run's output folder: the reproduction goes to ``triage/<target id>/`` in it."""
    python: str
    """The interpreter of the target's environment."""
    providers: tuple[str, ...]
    preset: dict[str, Any]
    release: str
    base_env: Mapping[str, str]
    timeout_s: float
    torch_config: str = ""


class Stop(Exception):
    """The triage cannot go on; the message is its ``stopped`` reason."""


def triage(req: Request) -> Triage:
    t0 = time.monotonic()
    notes: list[str] = []
    try:
        with tempfile.TemporaryDirectory(prefix="onnx-gate-triage-") as tmp:
            result = _triage(req, Path(tmp), t0, notes)
    except Stop as exc:
        result = Triage(TRIAGE_VERSION, req.check, stopped=str(exc))
    except Exception as exc:  # a bug or a file that cannot be read: the triage says so, the verdict stands
        result = Triage(TRIAGE_VERSION, req.check, stopped=f"{type(exc).__name__}: {str(exc)[:300]}")
    return dataclasses.replace(
        result, duration_s=round(time.monotonic() - t0, 3), notes=(*result.notes, *notes)
    )


def _left(req: Request, t0: float) -> float:
    left = req.timeout_s - (time.monotonic() - t0)
    if left <= 1:
        raise Stop(f"verify.triage_timeout_s ({req.timeout_s:g} s) ran out")
    return left


def _observe(
    req: Request, work: Path, name: str, runs: Sequence[dict[str, Any]], t0: float
) -> dict[str, Any]:
    """The runs, in the target's environment; what each did by its ``out``."""
    from ci_onnx.runners.python import package_path

    job_path = work / f"{name}.json"
    report = work / f"{name}-report.json"
    job = {"providers": list(req.providers), "preset": req.preset, "runs": list(runs), "report": str(report)}
    job_path.write_text(json.dumps(job))
    with package_path() as path:
        env = {**req.base_env, "PYTHONPATH": path, "PYTHONDONTWRITEBYTECODE": "1"}
        done = proc.run(
            [req.python, "-m", "ci_onnx.triage.observe", str(job_path)],
            timeout=_left(req, t0),
            env=env,
            what=f"{req.target.id} triage",
        )
    if not done.ok or not report.is_file():
        raise Stop(f"the target's runtime failed while triaging: {done.describe_failure()}")
    ran: dict[str, Any] = json.loads(report.read_text())["runs"]
    return ran


def _tolerance(manifest: Manifest, output: str) -> tuple[float, float]:
    tol = manifest.tolerance_per_output.get(output, manifest.tolerance)
    return tol.atol, tol.rtol


def _tensor_inputs(manifest: Manifest, bundle: Path, directory: str) -> dict[str, np.ndarray]:
    from ci_onnx.runners import feeds
    from ci_onnx.tensorproto import Tensor

    got = feeds.read_inputs(manifest, bundle, directory)
    if not all(isinstance(v, Tensor) for v in got.values()):
        raise Stop("the model takes sequences, maps or optionals; triage compares tensors only")
    return {k: v.array for k, v in got.items()}


def _reference_output(manifest: Manifest, bundle: Path, directory: str, output: str) -> np.ndarray:
    from ci_onnx import tensorproto

    index = [s.name for s in manifest.outputs].index(output)
    return tensorproto.load_tensor(bundle / directory / f"output_{index}.pb").array


def _pick(
    req: Request, manifest: Manifest, work: Path, t0: float
) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, str, tuple[np.ndarray, np.ndarray]]:
    """The sample the failure is worst on: its inputs, the target's output as it ran, PyTorch's output,
    a sentence saying which sample it is, and both outputs over every data set (flattened). Also
    saves the graph the target optimized."""
    from ci_onnx.runners import feeds

    atol, rtol = _tolerance(manifest, req.output)
    runs: list[dict[str, Any]] = []
    sets: list[str] = []
    for i, ds in enumerate(manifest.test_data_sets):
        inputs = work / f"set{i}"
        observe.write_values(inputs, _tensor_inputs(manifest, req.bundle, ds.directory))
        run: dict[str, Any] = {
            "model": str(req.bundle / MODEL),
            "inputs": str(inputs),
            "out": str(work / f"as-run{i}"),
            "outputs": [req.output],
        }
        if i == 0:
            run["save_optimized"] = str(work / "optimized.onnx")
        runs.append(run)
        sets.append(ds.directory)
    ran = _observe(req, work, "as-run", runs, t0)
    sliceable = not feeds.batch_axis_problem(manifest) and req.output in feeds.batched_outputs(manifest)
    best: tuple[float, int, int] | None = None
    everywhere: list[tuple[np.ndarray, np.ndarray]] = []
    for i, run in enumerate(runs):
        if "error" in ran.get(run["out"], {}):
            continue
        got = observe.read_values(Path(run["out"]))[req.output]
        ref = _reference_output(manifest, req.bundle, sets[i], req.output)
        if got.shape == ref.shape:
            everywhere.append((got.reshape(-1), ref.reshape(-1)))
        pieces = range(got.shape[0]) if sliceable and got.ndim and got.shape == ref.shape else [-1]
        for j in pieces:
            g, r = (got, ref) if j < 0 else (got[j : j + 1], ref[j : j + 1])
            share = walk.error(g, r, atol, rtol).share
            if req.check == "decision" and g.ndim and g.shape[-1] > 1:
                changed = bool(np.any(np.argmax(g, -1) != np.argmax(r, -1)))
                share = share + 1e6 if changed else share
            if best is None or share > best[0]:
                best = (share, i, j)
    if best is None:
        raise Stop("the target's runtime could not run any test data set while triaging")
    _, i, j = best
    arrays = observe.read_values(Path(runs[i]["inputs"]))
    got = observe.read_values(Path(runs[i]["out"]))[req.output]
    ref = _reference_output(manifest, req.bundle, sets[i], req.output)
    if j >= 0:
        arrays = {k: v[j : j + 1] for k, v in arrays.items()}
        got, ref = got[j : j + 1], ref[j : j + 1]
    if req.check != "decision" and not walk.error(got, ref, atol, rtol).out:
        raise Stop("the failure did not reproduce in the triage's own run of the target")
    which = f"sample {j} of {sets[i]}" if j >= 0 else sets[i]
    every = (np.concatenate([g for g, _ in everywhere]), np.concatenate([r for _, r in everywhere]))
    return arrays, got, ref, which, every


def _exposed_values(
    req: Request, model: Any, work: Path, name: str, sample: Path, t0: float
) -> dict[str, np.ndarray] | str:
    path = graph.save(graph.expose(model), work / f"{name}.onnx")
    out = work / f"{name}-values"
    ran = _observe(
        req,
        work,
        name,
        [{"model": str(path), "inputs": str(sample), "out": str(out), "level": "disable"}],
        t0,
    )
    error = ran.get(str(out), {}).get("error")
    return error if error else observe.read_values(out)


def _torch_values(
    req: Request,
    g: graph.Graph,
    sample: Path,
    shapes: Mapping[str, tuple[int, ...]],
    work: Path,
    t0: float,
    notes: list[str],
) -> dict[str, np.ndarray]:
    if not req.torch_config:
        notes.append(
            "PyTorch: no model factory to run (ONNX-only, or no onnx-gate.yml given); "
            "compared with the bundle's outputs only"
        )
        return {}
    if importlib.util.find_spec("torch") is None:
        notes.append(
            "PyTorch: torch is not installed where the triage ran; compared with the bundle's outputs only"
        )
        return {}
    out = work / "torch-values"
    done = proc.run(
        [
            sys.executable,
            "-m",
            "ci_onnx.triage.torchref",
            "--config",
            req.torch_config,
            "--inputs",
            str(sample),
            "--out",
            str(out),
        ],
        timeout=_left(req, t0),
        env=req.base_env,
        what=f"{req.target.id} triage (PyTorch)",
    )
    if not done.ok:
        notes.append(f"PyTorch: the model's forward could not run ({done.describe_failure()})")
        return {}
    found = graph.module_values(g, observe.read_values(out), shapes)
    if not found:
        notes.append("PyTorch: no module output could be matched to a value of the graph")
    return found


def _triage(req: Request, work: Path, t0: float, notes: list[str]) -> Triage:
    from ci_onnx.triage import reference

    manifest = read_manifest(req.bundle, verify_hashes=False)
    atol, rtol = _tolerance(manifest, req.output)
    model = graph.load(req.bundle / MODEL)
    g = graph.of(model)
    arrays, as_run, torch_out, which, everywhere = _pick(req, manifest, work, t0)
    sample = work / "sample"
    observe.write_values(sample, arrays)
    compared = ["the target as it ran"]
    exposed = _exposed_values(req, model, work, "exposed", sample, t0)
    off: dict[str, np.ndarray] | None = None
    if isinstance(exposed, str):
        notes.append(f"the target with optimizations off could not run the exposed graph: {exposed}")
    else:
        off = exposed
        compared.append("the target with optimizations off, every value exposed")
    optimized = None
    if (work / "optimized.onnx").is_file():
        opt_model = graph.load(work / "optimized.onnx")
        got = _exposed_values(req, opt_model, work, "optimized-exposed", sample, t0)
        if isinstance(got, str):
            notes.append(f"the graph the target optimized could not be run exposed: {got}")
        else:
            optimized = (graph.of(opt_model), got)
            compared.append("the graph the target optimized, every value exposed")
    else:
        notes.append("the target's runtime did not save the graph it optimized")
    fp32_graph, ref_model, fp32_tol = None, model, (atol, rtol)
    if manifest.precision != "fp32":
        fp32_dir = req.bundle.parent / dataclasses.replace(req.target, precision="fp32").bundle_key
        if not (fp32_dir / MODEL).is_file():
            raise Stop(
                f"the fp32 bundle {fp32_dir} is not there to compare the {manifest.precision} graph with"
            )
        ref_model = graph.load(fp32_dir / MODEL)
        fp32_graph = graph.of(ref_model)
        fp32_tol = _tolerance(read_manifest(fp32_dir, verify_hashes=False), req.output)
    _left(req, t0)
    try:
        ref_values: dict[str, np.ndarray] | None = reference.intermediates(ref_model, arrays)
        compared.append("onnx's ReferenceEvaluator" + (" on the fp32 graph" if fp32_graph else ""))
    except reference.ReferenceError_ as exc:
        notes.append(str(exc))
        ref_values = None
    shapes = {k: tuple(v.shape) for k, v in (ref_values or off or {}).items()}
    torch_values = (
        _torch_values(req, fp32_graph or g, sample, shapes, work, t0, notes)
        if manifest.precision == "fp32"
        else {}
    )
    if torch_values:
        compared.append("PyTorch, module by module")
    finding = classify.classify(
        classify.Sample(
            req.output,
            atol,
            rtol,
            g,
            torch_out,
            as_run,
            ref_values,
            off,
            torch_values,
            optimized,
            fp32_graph,
            req.release,
            manifest.precision,
            fp32_tol,
            everywhere,
        )
    )
    return _reported(req, model, g, finding, compared, which, atol, rtol, t0, notes)


def _reported(
    req: Request,
    model: Any,
    g: graph.Graph,
    f: classify.Finding,
    compared: list[str],
    which: str,
    atol: float,
    rtol: float,
    t0: float,
    notes: list[str],
) -> Triage:
    node = f.node
    origin = ""
    if node is not None and node.module:
        origin = node.module + (f" ({node.source})" if node.source else "")
    base = Triage(
        TRIAGE_VERSION,
        req.check,
        f.fault,
        node.name if node else "",
        node.op_type if node else "",
        f.summary,
        (f"on {which}", *f.evidence),
        origin,
        f.path,
        tuple(compared),
        f.suggested,
        stopped=f.stopped,
    )
    if f.fault is None or not f.repro_graph:
        return base
    where = req.out_dir / TRIAGE_DIR / req.target.id
    settings = repro.settings_of(req.preset, req.providers, req.release, level="" if f.as_run else "disable")
    try:
        size = repro.write(
            model,
            g,
            f.repro_inputs,
            f.repro_outputs,
            f.repro_values,
            f.repro_expected,
            where,
            settings,
            atol=(f.repro_tolerance or (atol, rtol))[0],
            rtol=(f.repro_tolerance or (atol, rtol))[1],
            what=f.summary,
            expected_from=f.expected_from,
        )
    except Exception as exc:  # the extractor cannot cut every graph; the finding stands without it
        notes.append(
            "no reproduction: onnx's extractor could not cut the subgraph "
            f"({type(exc).__name__}: {str(exc)[:200]})"
        )
        return base
    command = f"{req.python} {where / repro.SCRIPT}"
    check = proc.run(
        [req.python, str(where / repro.SCRIPT)], timeout=_left(req, t0), env=req.base_env, what="reproduction"
    )
    reproduces = (
        "the reproduction reproduces it on its own"
        if check.returncode == 1 and repro.MARK in check.stdout
        else (
            "the reproduction does not reproduce it on its own "
            f"({check.describe_failure() if not check.ok else 'exit 0'})"
        )
    )
    rel = where.relative_to(req.out_dir) if where.is_relative_to(req.out_dir) else where
    return dataclasses.replace(
        base,
        evidence=(*base.evidence, reproduces),
        reproduction=str(rel),
        reproduce=command,
        reproduction_bytes=size,
    )
