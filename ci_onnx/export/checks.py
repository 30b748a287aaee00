"""Checks of an exported graph, read from the file alone (no torch): each returns a CheckResult.

``checker``, ``opset``, ``train-mode``, ``dynamic-axes``, ``outputs``, ``graph``. The torch-side
checks (``export``, ``control-flow``) are in findings.py, ``reference-parity`` in parity.py.
"""

from __future__ import annotations

import collections
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ci_onnx.contracts.bundle import TensorSpec
from ci_onnx.contracts.results import CheckResult
from ci_onnx.contracts.target import Status

RANDOM_OPS = frozenset(
    {"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Bernoulli", "Multinomial"}
)
"""Ops whose outputs are random draws: in an inference graph, noise or dropout left on in eval."""

DECOMPOSED_RATIO = 20
"""A graph with this many nodes per torch module is worth a look: an operator was decomposed."""


def checker(path: Path) -> CheckResult:
    """onnx.checker with full_check (shape inference). One failure is onnx's and not the model's: its
    shape inference failing inside the function body of a standard op (MeanVarianceNormalization's
    body, opset 13, trips onnx's own Constant check). When the structural check passes and the
    error comes from inside such a body, the check passes with the error as a warning."""
    import onnx

    try:
        onnx.checker.check_model(str(path), full_check=True)
    except Exception as exc:  # onnx raises ValidationError, InferenceError, and more
        first = _first_line(exc)
        body_of = _failing_function_body(str(exc)) if _structurally_valid(onnx, path) else ""
        if not body_of:
            message = f"onnx.checker (full_check) rejected the model: {first}"
            return CheckResult("checker", Status.FAILED, message)
        warning = (
            f"onnx's shape inference fails inside the function body of the standard op {body_of} "
            f"(onnx {onnx.__version__}: {first}); that is onnx's own definition of the op, not this "
            "model, and the structural check passed"
        )
        return CheckResult(
            "checker",
            Status.PASSED,
            "onnx.checker passed; its shape inference failed only inside a standard op's function body",
            warnings=(warning,),
        )
    return CheckResult("checker", Status.PASSED, "onnx.checker with full_check (shape inference) passed")


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _structurally_valid(onnx: Any, path: Path) -> bool:
    try:
        onnx.checker.check_model(str(path), full_check=False)
    except Exception:
        return False
    return True


_NESTED = re.compile(
    r"\(op_type:(?P<outer>\w+)\): \[ShapeInferenceError\] Inference error\(s\): \(op_type:\w+"
)


def _failing_function_body(message: str) -> str:
    """The standard op whose function body onnx's shape inference failed in, per the error's nesting
    (``(op_type:OUTER): [ShapeInferenceError] Inference error(s): (op_type:INNER)``); "" otherwise."""
    import onnx.defs

    found = _NESTED.search(message)
    if found is None:
        return ""
    outer = found["outer"]
    try:
        schema = onnx.defs.get_schema(outer)
    except Exception:  # not a standard op: a custom domain's error is the model's
        return ""
    has_body = getattr(schema, "has_function", False) or getattr(
        schema, "has_context_dependent_function", False
    )
    return outer if has_body else ""


def default_opset(model: Any) -> int:
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)


def opset(model: Any, requested: int, exporter: str) -> CheckResult:
    written = default_opset(model)
    figures = {"requested": requested, "written": written}
    if written == requested:
        return CheckResult("opset", Status.PASSED, f"the file is at opset {written}, as asked", figures)
    hint = (
        " (dynamo builds at 18 and keeps 18 when down-conversion fails: export at opset 18 or higher, or "
        "use the torchscript exporter for older opsets)"
        if exporter == "dynamo"
        else ""
    )
    return CheckResult(
        "opset",
        Status.FAILED,
        f"asked for opset {requested} but the file is at opset {written}{hint}",
        figures,
    )


def train_mode(model: Any) -> CheckResult:
    """A Dropout whose training_mode is a constant True, BatchNormalization with training_mode=1, or a
    node that draws random numbers (randomness left on in eval: no runtime can reproduce its outputs)."""
    constants = _constant_bools(model)
    culprits: list[str] = []
    for node in model.graph.node:
        if node.op_type in RANDOM_OPS:
            culprits.append(f"{node.op_type} {node.name or node.output[0]!r} (draws random numbers)")
        if node.op_type == "Dropout" and len(node.input) >= 3 and constants.get(node.input[2]) is True:
            culprits.append(f"Dropout {node.name or node.output[0]!r} (training_mode=True)")
        if node.op_type == "BatchNormalization":
            for attr in node.attribute:
                if attr.name == "training_mode" and attr.i == 1:
                    culprits.append(f"BatchNormalization {node.name or node.output[0]!r} (training_mode=1)")
    if culprits:
        return CheckResult(
            "train-mode",
            Status.FAILED,
            f"the graph computes in training mode: {', '.join(culprits[:5])}"
            f"{f' and {len(culprits) - 5} more' if len(culprits) > 5 else ''}; look for a layer that "
            "hard-codes training=True (F.dropout defaults to it, F.batch_norm(training=True)) or draws "
            "noise in forward (torch.randn_like, torch.rand) outside `if self.training`",
            {"nodes": len(culprits)},
        )
    return CheckResult(
        "train-mode", Status.PASSED, "no Dropout or BatchNormalization in training mode, no random draws"
    )


def _constant_bools(model: Any) -> dict[str, bool]:
    from onnx import numpy_helper

    out: dict[str, bool] = {}
    tensors = [(t.name, t) for t in model.graph.initializer]
    for node in model.graph.node:
        if node.op_type == "Constant":
            for attr in node.attribute:
                if attr.name == "value":
                    tensors.append((node.output[0], attr.t))
    for name, tensor in tensors:
        arr = numpy_helper.to_array(tensor)
        if arr.size == 1 and arr.dtype.kind == "b":
            out[name] = bool(arr.reshape(()))
    return out


def dims_of(value_info: Any) -> list[int | str]:
    """A graph input's or output's dims: ints when fixed, names when symbolic, '?' when unknown."""
    dims: list[int | str] = []
    for d in value_info.type.tensor_type.shape.dim:
        if d.HasField("dim_value"):
            dims.append(int(d.dim_value))
        else:
            dims.append(d.dim_param or "?")
    return dims


def dynamic_axes(
    model: Any, inputs: Sequence[TensorSpec], declared: Mapping[str, Mapping[str, str]]
) -> CheckResult:
    """Each declared axis is symbolic in the graph; an input's undeclared axes are fixed."""
    graph_inputs = {vi.name: dims_of(vi) for vi in model.graph.input}
    graph_outputs = {vi.name: dims_of(vi) for vi in model.graph.output}
    problems: list[str] = []
    notes: list[str] = []
    for spec in inputs:
        dims: list[int | str] | None = graph_inputs.get(spec.name)
        if dims is None:
            continue  # the outputs check reports names; an input the graph dropped is not an axis issue
        axes = declared.get(spec.name, {})
        for axis, want in enumerate(spec.shape):
            got: int | str = dims[axis] if axis < len(dims) else "?"
            if str(axis) in axes:
                if isinstance(got, int):
                    problems.append(
                        f"input {spec.name!r} axis {axis} ({axes[str(axis)]}) is declared dynamic but "
                        f"the graph fixes it at {got}"
                    )
            elif isinstance(want, str):
                problems.append(
                    f"input {spec.name!r} axis {axis} is {want!r} in model.inputs but not in "
                    f"model.dynamic_axes, so the graph fixes it at {got}; declare "
                    f"model.dynamic_axes.{spec.name}: {{{axis}: {want}}}"
                )
            elif not isinstance(got, int):
                problems.append(f"input {spec.name!r} axis {axis} should be fixed at {want} but is {got!r}")
    for name, axes in declared.items():
        if name not in graph_outputs:
            continue
        dims = graph_outputs[name]
        for key, sym in axes.items():
            out_dim = dims[int(key)] if int(key) < len(dims) else "?"
            if isinstance(out_dim, int):
                problems.append(
                    f"output {name!r} axis {key} ({sym}) is declared dynamic but fixed at {out_dim}"
                )
        for axis, got in enumerate(dims):
            if str(axis) not in axes and not isinstance(got, int):
                notes.append(f"output {name!r} axis {axis} is symbolic ({got}) though not declared dynamic")
    figures = {"inputs": graph_inputs, "outputs": graph_outputs}
    if problems:
        return CheckResult("dynamic-axes", Status.FAILED, "; ".join(problems), figures, warnings=tuple(notes))
    return CheckResult(
        "dynamic-axes",
        Status.PASSED,
        "declared dynamic axes are symbolic, the others fixed",
        figures,
        warnings=tuple(notes),
    )


def outputs(
    model: Any,
    declared: Sequence[str],
    inputs: Sequence[str] = (),
    structure: Sequence[str | None] = (),
) -> CheckResult:
    """Output names and count as declared; an output named like an input or inner value is an error.

    ``structure``: the names the model's structure gives what it returns, in returned order
    (``signature.named_leaves``; None where only the position says). A declaration that puts those
    names in another order contradicts the model: the graph's output would hold another tensor.
    """
    got = [vi.name for vi in model.graph.output]
    figures: dict[str, Any] = {"declared": list(declared), "graph": got}
    if any(n is not None for n in structure):
        figures["returned"] = list(structure)
    contradiction = _misordered(declared, structure)
    if contradiction:
        return CheckResult(
            "outputs",
            Status.FAILED,
            f"model.outputs declares {list(declared)}, but the model returns them named in the order "
            f"{[n or '?' for n in structure]} (its dict keys or output fields): {contradiction}; declare "
            "model.outputs in the order the model returns them",
            figures,
        )
    weights = {i.name for i in model.graph.initializer}
    graph_inputs = [vi.name for vi in model.graph.input if vi.name not in weights]
    renamed = [n for n in inputs if n not in graph_inputs]
    if renamed:
        clash = [n for n in renamed if n in declared]
        why = (
            f"output name(s) {', '.join(map(repr, clash))} clash with the input(s) of the same name, so the "
            "exporter renamed the input"
            if clash
            else "the exporter renamed them"
        )
        return CheckResult(
            "outputs",
            Status.FAILED,
            f"the graph's inputs are {graph_inputs}, not {list(inputs)}: {why}; give inputs and outputs "
            "distinct names in model.inputs and model.outputs",
            {**figures, "graph_inputs": graph_inputs},
        )
    internal = {n for node in model.graph.node for n in node.input} | {
        i.name for i in model.graph.initializer
    }
    internal |= {vi.name for vi in model.graph.input}
    clashes = [n for n in declared if n in internal and n not in got]
    clashes += [n for n in got if n in {vi.name for vi in model.graph.input}]
    if clashes:
        return CheckResult(
            "outputs",
            Status.FAILED,
            f"output name(s) {', '.join(map(repr, dict.fromkeys(clashes)))} clash with an input, weight or "
            "intermediate value of the graph; rename them in model.outputs",
            figures,
        )
    if len(got) != len(declared):
        return CheckResult(
            "outputs",
            Status.FAILED,
            f"model.outputs declares {len(declared)} output(s) {list(declared)} but the model returns "
            f"{len(got)}: {got}",
            figures,
        )
    if got != list(declared):
        return CheckResult(
            "outputs", Status.FAILED, f"the graph's outputs are named {got}, not {list(declared)}", figures
        )
    notes: tuple[str, ...] = ()
    named = [n for n in structure if n is not None]
    if named and not set(named) & set(declared):
        notes = (
            f"the model names its outputs {named}, model.outputs calls them {list(declared)}: matched by "
            "position",
        )
    return CheckResult(
        "outputs", Status.PASSED, f"{len(got)} output(s) named as declared", figures, warnings=notes
    )


def _misordered(declared: Sequence[str], structure: Sequence[str | None]) -> str:
    """Where a declared name is one the model gives to a tensor at another position; "" if nowhere."""
    position = {n: i for i, n in enumerate(structure) if n is not None}
    wrong = [
        f"the graph's output {name!r} would hold what the model calls {structure[i] or f'its output {i}'!r}"
        for i, name in enumerate(declared)
        if name in position and position[name] != i and i < len(structure)
    ]
    return "; ".join(wrong[:3])


def histogram(model: Any) -> dict[str, int]:
    counts = collections.Counter(
        f"{n.domain}::{n.op_type}" if n.domain not in ("", "ai.onnx") else n.op_type for n in model.graph.node
    )
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def graph(model: Any, files: Sequence[Path], modules: int | None) -> CheckResult:
    nodes = len(model.graph.node)
    size = sum(p.stat().st_size for p in files if p.is_file())
    figures: dict[str, Any] = {"nodes": nodes, "bytes": size, "op_types": len(histogram(model))}
    warnings: list[str] = []
    if modules:
        figures["torch_modules"] = modules
        if nodes > DECOMPOSED_RATIO * modules:
            warnings.append(
                f"{nodes} nodes for {modules} torch modules ({nodes / modules:.0f} per module): an operator "
                "was probably decomposed into many small ones; see op_histogram in the manifest"
            )
    return CheckResult(
        "graph",
        Status.PASSED,
        f"{nodes} nodes, {len(histogram(model))} op types, {size / 1e6:.2f} MB",
        figures,
        warnings=tuple(warnings),
    )
