"""One triage, end to end: pick the failing sample, run the references, walk, classify, reproduce.

The target's runtime runs in the target's own environment (ci_onnx.triage.observers: the host's
onnxruntime may be another release), PyTorch in a child of its own where torch is installed
(ci_onnx.triage.torchref), onnx's ReferenceEvaluator here. Every failure becomes the Triage's
``stopped`` reason, never an exception that reaches the verdict.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import importlib.util
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from ci_onnx.contracts import proc
from ci_onnx.contracts.bundle import MODEL, read_manifest
from ci_onnx.contracts.triage_contract import TRIAGE_VERSION, Triage
from ci_onnx.observer import triage as triage_observer
from ci_onnx.triage import bisect, bounds, classify, graph, observers, repro, sample
from ci_onnx.triage.request import Budget, Request, Stop

TRIAGE_DIR = "triage"


def triage(req: Request) -> Triage:
    budget = Budget(req.timeout_s)
    notes: list[str] = []
    shutil.rmtree(req.out_dir / TRIAGE_DIR / req.target.id, ignore_errors=True)  # never an earlier run's
    try:
        with tempfile.TemporaryDirectory(prefix="onnx-gate-triage-") as tmp:
            result = _triage(req, Path(tmp), budget, notes)
    except Stop as exc:
        result = Triage(TRIAGE_VERSION, req.check, stopped=str(exc))
    except Exception as exc:  # a bug or a file that cannot be read: the triage says so, the verdict stands
        result = Triage(TRIAGE_VERSION, req.check, stopped=f"{type(exc).__name__}: {str(exc)[:300]}")
    return dataclasses.replace(result, duration_s=budget.spent(), notes=(*result.notes, *notes))


def _since(clock: float) -> str:
    return f"{time.monotonic() - clock:.1f} s"


def _runner(req: Request) -> str:
    return "the target" if req.kind == "python" else f"the {req.kind} runner"


def _triage(req: Request, work: Path, budget: Budget, notes: list[str]) -> Triage:
    from ci_onnx.triage import reference

    manifest = read_manifest(req.bundle, verify_hashes=False)
    atol, rtol = sample.tolerance(manifest, req.output)
    model = graph.load(req.bundle / MODEL)
    g = graph.of(model)
    clock = time.monotonic()
    picked = sample.pick(req, manifest, work, budget)
    compared = [f"{_runner(req)} as it ran ({_since(clock)})"]
    runs = 2 if req.kind == "python" and observers.optimized_graph(work) is not None else 1
    limit = bounds.bound(
        g, bounds.sizes(model, picked.inputs), req.memory_mb - bounds.held_mb(), req.disk_mb, runs=runs,
        keep=[req.output], limit_mb=req.memory_mb,
    )  # fmt: skip
    if limit.note:
        notes.append(limit.note)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        # PyTorch's child starts now and imports torch while the target's runtime runs
        fx = graph.fx_wanted(g, limit.exposed) if manifest.exporter == "dynamo" else {}
        torch_run = pool.submit(_torch_run, req, manifest, picked.inputs, work, budget, notes, fx)
        off, optimized = _exposed(req, model, manifest, work, picked.inputs, budget, compared, notes, limit)
        fp32_graph, ref_model, fp32_tol = None, model, (atol, rtol)
        if manifest.precision != "fp32":
            fp32_dir = req.bundle.parent / dataclasses.replace(req.target, precision="fp32").bundle_key
            if not (fp32_dir / MODEL).is_file():
                raise Stop(
                    f"the fp32 bundle {fp32_dir} is not there to compare the {manifest.precision} graph with"
                )
            ref_model = graph.load(fp32_dir / MODEL)
            fp32_graph = graph.of(ref_model)
            fp32_tol = sample.tolerance(read_manifest(fp32_dir, verify_hashes=False), req.output)
        budget.left()
        clock = time.monotonic()
        try:
            if not limit.reference:
                raise reference.ReferenceError_("onnx's ReferenceEvaluator: left out by the memory limit")
            ref_all: dict[str, np.ndarray] | None = reference.intermediates(ref_model, picked.inputs)
            ref_values = _only(ref_all, limit.exposed) if ref_all is not None else None
            on = " on the fp32 graph" if fp32_graph else ""
            compared.append(f"onnx's ReferenceEvaluator{on} ({_since(clock)})")
        except reference.ReferenceError_ as exc:
            notes.append(str(exc))
            ref_all = ref_values = None
        stand_in = ref_values is None and off is not None and fp32_graph is None
        if stand_in:  # the graph's values from the target with optimizations off: export ≟ runtime
            notes.append("the target with optimizations off stands in for onnx's reference")
            ref_values = off
        shapes = {k: tuple(v.shape) for k, v in (ref_values or off or {}).items()}
        modules, torch_s = torch_run.result()
    torch_labels: dict[str, str] = {}
    torch_values = graph.module_values(g, modules, shapes, torch_labels) if modules else {}
    if modules and not torch_values:
        notes.append("PyTorch: no module output could be matched to a value of the graph")
    if torch_values:
        compared.append(f"PyTorch, module by module ({torch_s:.1f} s, beside the runtime's runs)")
    said = classify.Sample(
            req.output,
            atol,
            rtol,
            g,
            picked.torch_out,
            picked.as_run,
            ref_values,
            off,
            torch_values,
            optimized,
            fp32_graph,
            req.release,
            manifest.precision,
            fp32_tol,
            "the bundle's expected outputs" if manifest.exporter == "onnx" else "PyTorch",
            picked.everywhere,
            stand_in,
            torch_labels,
            engine(req),
        )  # fmt: skip
    finding = classify.classify(said)
    if limit.exposed is not None and ref_all is not None and off is not None and fp32_graph is None:

        def expose_more(values: frozenset[str]) -> dict[str, np.ndarray]:
            """The target's ``values`` (optimizations off), in one more run of its runtime."""
            only = {"narrowed": values}
            got = observers.exposed(req, {"narrowed": model}, manifest, work, picked.inputs, budget, only)
            if isinstance(got["narrowed"], str):
                raise Stop(f"the target's runtime could not run the narrowed graph: {got['narrowed']}")
            return got["narrowed"]

        finding = bisect.narrowed(said, finding, limit, ref_all, expose_more, notes)
    return _reported(req, model, g, finding, compared, picked.which, (atol, rtol), budget, notes)


def _only(values: dict[str, np.ndarray], exposed: frozenset[str] | None) -> dict[str, np.ndarray]:
    """``values`` less the node outputs a limit left out (every one where ``exposed`` is None)."""
    return values if exposed is None else {k: v for k, v in values.items() if k in exposed}


def _exposed(
    req: Request,
    model: Any,
    manifest: Any,
    work: Path,
    inputs: dict[str, np.ndarray],
    budget: Budget,
    compared: list[str],
    notes: list[str],
    limit: bounds.Bound,
) -> tuple[dict[str, np.ndarray] | None, tuple[graph.Graph, dict[str, np.ndarray]] | None]:
    """The target's values of every node (those ``limit`` keeps), with optimizations off where the
    kind can say so, and of the graph it optimized and ran (python kind only), in one run of the
    target's runtime; the optimized graph's values are those kept and those of its own new nodes."""
    models = {"exposed": model}
    only: dict[str, Any] = {"exposed": limit.exposed}
    path = observers.optimized_graph(work) if req.kind == "python" else None
    if path is not None:
        models["optimized-exposed"] = graph.load(path)
        if limit.exposed is not None:
            known = {o for n in model.graph.node for o in n.output}
            new = {o for n in models["optimized-exposed"].graph.node for o in n.output if o not in known}
            only["optimized-exposed"] = limit.exposed | new
    elif req.kind == "python":
        notes.append("the target's runtime did not save the graph it optimized")
    else:
        notes.append(
            f"the {req.kind} runner does not save the graph it optimized: no optimization class here"
        )
    clock = time.monotonic()
    got = observers.exposed(req, models, manifest, work, inputs, budget, only)
    spent = _since(clock)
    off, optimized = got["exposed"], got.get("optimized-exposed")
    how = "with optimizations off, " if req.kind == "python" else ""
    if isinstance(off, str):
        notes.append(f"{_runner(req)} could not run the exposed graph: {off}")
    else:
        compared.append(f"{_runner(req)} {how}every value exposed ({spent})")
    if isinstance(optimized, str):
        notes.append(f"the graph the target optimized could not be run exposed: {optimized}")
    elif optimized is not None:
        compared.append("the graph the target optimized, every value exposed (the same run)")
    return (
        off if not isinstance(off, str) else None,
        (graph.of(models["optimized-exposed"]), optimized) if isinstance(optimized, dict) else None,
    )


def _torch_run(
    req: Request,
    manifest: Any,
    inputs: dict[str, np.ndarray],
    work: Path,
    budget: Budget,
    notes: list[str],
    fx: dict[str, str],
) -> tuple[dict[str, np.ndarray], float]:
    """PyTorch's module outputs and inputs on the sample (torchref's names → array) and the seconds
    it took, where the bundle came from a factory here and torch is installed; nothing, with a note,
    otherwise. ``fx``: the exported program's nodes whose values PyTorch records too (``fx:<node>``)."""
    if manifest.precision != "fp32":
        return {}, 0.0  # a derived precision is compared with its fp32 graph
    if not req.torch_config:
        notes.append(
            "PyTorch: no model factory to run (ONNX-only, or no onnx-gate.yml given); "
            "compared with the bundle's outputs only"
        )
        return {}, 0.0
    if importlib.util.find_spec("torch") is None:
        notes.append(
            "PyTorch: torch is not installed where the triage ran; compared with the bundle's outputs only"
        )
        return {}, 0.0
    triage_observer.write_values(work / "torch-inputs", inputs)
    out = work / "torch-values"
    argv = [sys.executable, "-m", "ci_onnx.triage.torchref", "--config", req.torch_config,
            "--inputs", str(work / "torch-inputs"), "--out", str(out),
            *(["--model", req.target.model] if req.target.model else [])]  # fmt: skip
    if fx:  # the exported program's nodes too: values no module hands on (dynamo's metadata names them)
        (work / "fx.json").write_text(json.dumps(fx))
        argv += ["--fx", str(work / "fx.json")]
    done = proc.run(argv, timeout=budget.left(), env=req.base_env, what=f"{req.target.id} triage (PyTorch)")
    if not done.ok:
        notes.append(f"PyTorch: the model's forward could not run ({done.describe_failure()})")
        return {}, done.duration_s
    return triage_observer.read_values(out), done.duration_s


def _reported(
    req: Request,
    model: Any,
    g: graph.Graph,
    f: classify.Finding,
    compared: list[str],
    which: str,
    tol: tuple[float, float],
    budget: Budget,
    notes: list[str],
) -> Triage:
    node = f.node
    origin = (
        node.module + (f" ({node.source})" if node.source else "") if node is not None and node.module else ""
    )
    preset = ", ".join(f"{k}={v}" for k, v in req.preset.items())
    settings_line = (f"the cell's session settings: {preset}",)
    evidence = (f"on {which}", *(settings_line if req.preset else ()), *f.evidence)
    name, op = (node.name, node.op_type) if node is not None else ("", "")
    base = Triage(
        TRIAGE_VERSION, req.check, f.fault, name, op, f.summary, evidence, origin, f.path, tuple(compared),
        f.suggested, stopped=f.stopped,
    )  # fmt: skip
    if f.fault is None or not f.repro_graph:
        return base
    where = req.out_dir / TRIAGE_DIR / req.target.id
    settings = repro.settings_of(req.preset, req.providers, req.release, level="" if f.as_run else "disable")
    atol, rtol = f.repro_tolerance or tol
    try:
        size = repro.write(
            model, g, f.repro_inputs, f.repro_outputs, f.repro_values, f.repro_expected, where, settings,
            atol=atol, rtol=rtol, what=f.summary, expected_from=f.expected_from,
        )  # fmt: skip
    except Exception as exc:  # the extractor cannot cut every graph; the finding stands without it
        why = f"{type(exc).__name__}: {str(exc)[:200]}"
        notes.append(f"no reproduction: onnx's extractor could not cut the subgraph ({why})")
        return base
    rel = where.relative_to(req.out_dir) if where.is_relative_to(req.out_dir) else where
    found = dataclasses.replace(base, reproduction=str(rel), reproduction_bytes=size)
    if req.kind != "python":  # reproduce.py needs Python and onnxruntime of the release: say so, run nothing
        return dataclasses.replace(found, evidence=(*found.evidence, _pip_hint(req, where)))
    check = proc.run(
        [req.python, str(where / repro.SCRIPT)], timeout=budget.left(), env=req.base_env, what="reproduction"
    )
    on_its_own = check.returncode == 1 and repro.MARK in check.stdout
    said = (
        "the reproduction reproduces it on its own"
        if on_its_own
        else "the reproduction does not reproduce it on its own "
        f"({check.describe_failure() if not check.ok else 'exit 0'})"
    )
    return dataclasses.replace(
        found, evidence=(*found.evidence, said), reproduce=f"{req.python} {where / repro.SCRIPT}"
    )


def engine(req: Request) -> str:
    """The engine the target ran on: onnxruntime, or the package of a kind with its own engine."""
    from ci_onnx import matrix

    info = matrix.runners().get(req.kind)
    return req.env_package if info is not None and info.releases and req.env_package else "onnxruntime"


def _pip_hint(req: Request, where: Path) -> str:
    if engine(req) != "onnxruntime":  # the reproduction runs onnxruntime: it cannot show this engine
        return (
            f"the reproduction runs onnxruntime, not {engine(req)}: run its subgraph on {engine(req)} "
            f"{req.release} to see the difference (python {where / repro.SCRIPT} shows onnxruntime's)"
        )
    return (
        f"the reproduction runs in Python: pip install onnxruntime=={req.release} numpy, then "
        f"python {where / repro.SCRIPT} (the {req.kind} runner's numbers may still differ from Python's)"
    )
