"""The torch path of one bundle: build the model, export, check, compute references, write the bundle.

Runs in the child process (``python -m ci_onnx.export.worker``): it imports torch.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from ci_onnx.config import Config
from ci_onnx.contracts import labels as labelled
from ci_onnx.contracts.bundle import MODEL, Manifest, TensorSpec, TestDataSet, batch_symbol
from ci_onnx.contracts.results import CheckResult
from ci_onnx.contracts.target import Status
from ci_onnx.export import (
    checks,
    differential,
    factory,
    inputs,
    parity,
    reference,
    signature,
    state,
    sweep,
    sweep_sets,
    torch_export,
    writer,
)

NO_MODEL = "not run: the export produced no model"


def export_bundle(cfg: Config, opset: int, exporter: str, bundle_dir: Path) -> Manifest:
    """Write the bundle for (``opset``, ``exporter``) into ``bundle_dir``; user errors raise ConfigError."""
    import onnx
    import torch

    m = cfg.model
    specs = m.inputs
    samples = inputs.load_samples(cfg.resolve(m.samples), specs) if m.samples else None
    labels = inputs.labels_of(cfg, samples)
    model = factory.build_model(m.factory, cfg.root)
    binding = signature.bind(model.forward, [s.name for s in specs])
    snapshot = state.Snapshot.take(model)  # before the exporter's own calls of forward
    writer.fresh_dir(bundle_dir)
    axes = inputs.batch_axes(specs)
    batch_dynamic = any(str(a) in m.dynamic_axes.get(name, {}) for name, a in axes.items())
    # the batch symbol's export size: dim_sizes may set it (every input follows), else 2
    symbol = batch_symbol(specs)
    example_batch = (
        int(m.dim_sizes.get(symbol, inputs.EXAMPLE_BATCH)) if batch_dynamic else min(cfg.verify.batch_sizes)
    )
    example = inputs.random_inputs(specs, example_batch, cfg.verify.seed + 1, m.dim_sizes)
    path = bundle_dir / MODEL
    outcome = torch_export.export(
        model,
        [torch.tensor(example[s.name]) for s in specs],  # copies: a forward may change its inputs
        path,
        exporter=exporter,
        opset=opset,
        inputs=specs,
        outputs=m.outputs,
        dynamic_axes=m.dynamic_axes,
        binding=binding,
    )
    findings = [export_finding(outcome, exporter, opset, binding), control_flow_finding(outcome, exporter)]
    if not outcome.ok:
        for leftover in bundle_dir.glob(f"{MODEL}*"):
            leftover.unlink()
        return writer.write(
            bundle_dir,
            cfg,
            exporter=exporter,
            requested_opset=opset,
            findings=writer.complete(findings, NO_MODEL),
        )

    proto = onnx.load(str(path))
    files = [p for p in bundle_dir.iterdir() if p.name.startswith(MODEL)]
    size = {"model_bytes": sum(p.stat().st_size for p in files)}  # per precision in the report
    findings[0] = dataclasses.replace(findings[0], figures={**findings[0].figures, **size})
    modules = sum(1 for mod in model.modules() if not any(True for _ in mod.children()))
    findings += [
        checks.checker(path),
        checks.opset(proto, opset, exporter),
        checks.train_mode(proto),
        checks.graph(proto, files, modules),
    ]

    torch_run = reference.Torch(model, binding, specs, m.outputs, snapshot)
    findings.append(
        state.stateful(
            model,
            snapshot,
            lambda: torch_run.call(example).outputs,
            cfg.verify.tolerance,
            cfg.verify.tolerance_per_output,
        )
    )
    random = inputs.random_inputs(specs, cfg.verify.random_inputs, cfg.verify.seed, m.dim_sizes)
    data: list[tuple[str, TestDataSet, dict[str, Any], dict[str, Any]]] = []
    torch_failed = ""
    structure: tuple[str | None, ...] = ()
    for index, (kind, feeds) in enumerate([("random", random), ("sample", samples)]):
        if feeds is None:
            continue
        count = inputs.count_of(feeds, specs)
        try:
            run = torch_run.run(feeds)
        except Exception as exc:  # the model itself fails on these inputs: say so, keep the bundle
            torch_failed = f"torch failed on the {kind} inputs ({count} stacked): {type(exc).__name__}: {exc}"
            break
        structure = structure or run.structure
        directory = writer.write_set(bundle_dir, index, feeds, run.outputs)
        if kind == "sample":
            labelled.write_labels(bundle_dir / directory, m.outputs, labels)
        data.append((directory, TestDataSet(directory, kind, count), feeds, run.outputs))
    findings.append(checks.outputs(proto, m.outputs, [s.name for s in specs], structure))
    maxima = {**sweep.position_maxima(model, specs, m.dynamic_axes), **m.dim_max}
    findings += differential.findings(
        cfg, path, proto, outcome, exporter, torch_run, example_batch, samples, example, maxima
    )
    axes_check = next((f for f in findings if f.name == "dynamic-axes"), None)
    points = sweep_sets.write(
        bundle_dir,
        specs,
        m.dynamic_axes,
        batch=example_batch,
        dim_sizes=m.dim_sizes,
        seed=cfg.verify.seed,
        declared=cfg.verify.sweeps,
        maxima=maxima,
        reference=torch_run,
        who="PyTorch",
        inconclusive=sweep_sets.inconclusive_points(axes_check),
    )
    if torch_failed:
        findings.append(CheckResult("reference-parity", Status.FAILED, torch_failed.splitlines()[0][:500]))
    else:
        findings.append(
            parity.reference_parity(
                path,
                [(d, feeds, refs) for d, _, feeds, refs in data],
                cfg.verify.tolerance,
                cfg.verify.tolerance_per_output,
                mutated=tuple(torch_run.mutated),
                rerun=torch_run,
            )
        )
    return writer.write(
        bundle_dir,
        cfg,
        exporter=exporter,
        requested_opset=opset,
        findings=writer.complete(findings, NO_MODEL),
        opset=checks.default_opset(proto),
        ir_version=int(proto.ir_version),
        outputs=graph_outputs(proto),
        test_data_sets=[t for _, t, _, _ in data],
        node_count=len(proto.graph.node),
        op_histogram=checks.histogram(proto),
        sweep_sets=points,
    )


def export_finding(
    outcome: torch_export.ExportOutcome, exporter: str, opset: int, binding: signature.Binding | None = None
) -> CheckResult:
    figures: dict[str, Any] = {
        "seconds": round(outcome.duration_s, 2),
        "external_data": outcome.external_data,
    }
    call = ""
    renamed: list[str] = []
    if binding is not None:
        figures["call"] = binding.describe()
        call = "" if binding.obvious else f"; inputs bound as {binding.describe()}"
        if binding.by_position():
            figures["by_position"] = dict(binding.by_position())
        renamed = signature.renamed_warnings(dict(binding.by_position()))
    if outcome.ok:
        return CheckResult(
            "export",
            Status.PASSED,
            f"exported with {exporter} at opset {opset} in {outcome.duration_s:.1f} s{call}",
            figures,
            warnings=(*renamed, *outcome.warnings),
        )
    if outcome.unsupported_op:
        made_by = f", made by {outcome.construct}" if outcome.construct else ""
        message = (
            f"the {exporter} exporter does not support the operator {outcome.unsupported_op}{made_by} "
            f"(at opset {opset}): {outcome.error}; replace it in the model, or try the other exporter "
            "or a newer opset"
        )
        figures["operator"] = outcome.unsupported_op
    elif outcome.data_dependent:
        # the cause is the model's control flow, and that check fails; this one only says why no file
        return CheckResult(
            "export",
            Status.SKIPPED,
            f"no model written: {exporter} stopped on control flow that depends on a tensor value; see "
            "control-flow",
            figures,
            warnings=outcome.warnings,
        )
    else:
        message = f"the {exporter} exporter failed: {outcome.error}"
    return CheckResult("export", Status.FAILED, message, figures, warnings=outcome.warnings)


def control_flow_finding(outcome: torch_export.ExportOutcome, exporter: str) -> CheckResult:
    if outcome.data_dependent:
        return CheckResult(
            "control-flow",
            Status.FAILED,
            f"a Python branch on a tensor value cannot be exported by dynamo: {outcome.error}; use "
            "torch.where or torch.cond, or branch on shapes only",
        )
    if outcome.frozen_branches and outcome.ok:
        return CheckResult(
            "control-flow",
            Status.SKIPPED,
            "not judged: the differential run of the suspect branches did not happen",
            {},
            warnings=outcome.frozen_branches,
        )  # replaced by control_flow.differential once the file is written and checked
    if not outcome.ok:
        return CheckResult("control-flow", Status.SKIPPED, "not judged: the export failed for another reason")
    how = (
        "torch.export traced it without data-dependent guards"
        if exporter == "dynamo"
        else "the trace raised no TracerWarning outside torch"
    )
    return CheckResult("control-flow", Status.PASSED, how)


def graph_outputs(proto: Any) -> tuple[TensorSpec, ...]:
    from onnx import helper

    out = []
    for vi in proto.graph.output:
        elem = vi.type.tensor_type.elem_type
        dtype = helper.tensor_dtype_to_np_dtype(elem).name if elem else ""
        out.append(TensorSpec(vi.name, tuple(checks.dims_of(vi)), dtype))
    return tuple(out)
