"""The fault classes that name a node: export, runtime, optimization and precision, each from the
comparisons that define it (ci_onnx.triage.classify decides which applies)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ci_onnx.contracts.triage_contract import FaultClass
from ci_onnx.triage import graph, walk
from ci_onnx.triage.findings import Finding, Sample, boundary, downstream, fmt, name, region


def export(s: Sample, torch_errs: Mapping[str, walk.Error], within: set[str], facts: list[str]) -> Finding:
    assert s.reference is not None
    node = walk.first_divergence(s.graph, torch_errs, within) if torch_errs else None
    if node is None:
        note = (
            "PyTorch's module outputs were not available"
            if not torch_errs
            else "no module output diverges first"
        )
        summary = (
            f"export fault: onnx's reference differs from {s.source} at {s.output} ({note} to name the node)"
        )
        return Finding(FaultClass.EXPORT, s.graph.producer().get(s.output), summary, tuple(facts), stopped="")
    value = next(o for o in node.outputs if o in torch_errs and torch_errs[o].out)
    group = region(s.graph, value, torch_errs)
    rows = walk.path(s.graph, node, s.output, torch_errs)
    graph_says = "the graph as onnxruntime computes it" if s.stand_in else "onnx's reference"
    inputs = boundary(group, s.graph)
    label = s.torch_labels.get(value, node.module)
    matched = [s.torch_labels.get(i, "") for i in inputs if i in torch_errs and not torch_errs[i].out]
    # A node is blamed alone only where PyTorch has its output as a module's own output and every
    # input it takes was compared and agrees; otherwise the ops between the nearest values PyTorch
    # has (a custom Function's symbolic, an op no module owns) are the bracket, named as such.
    # (for dynamo, the exported program's node the graph's node came from counts as its own too)
    own = bool(label) and not label.endswith(graph.INPUT) and label in (node.module, graph.FX + node.fx)
    compared_in = all(i in torch_errs for i in inputs)
    if own and compared_in:
        where = f"at {name(node)}"
        whose = node.module or f"the exported program's {node.fx}"
        told = (
            f"PyTorch's output of {whose} differs from {graph_says} at {value} "
            f"by {fmt(torch_errs[value])} while its inputs match"
        )
        fix = f"fix the model or the export of {whose}" + (f" ({node.source})" if node.source else "")
    else:
        after = ", ".join(f"`{_shown(m)}`" for m in dict.fromkeys(matched) if m) or "the inputs"
        before = f"`{_shown(label)}`" if label else "the output"
        ops = ", ".join(dict.fromkeys(n.op_type for n in group if n.op_type != "Constant")) or node.op_type
        where = f"between {after} and {before}: {ops}"
        told = (
            f"{graph_says} agrees with PyTorch at {after} and differs by {fmt(torch_errs[value])} at "
            f"{value} ({'the input of ' + before if label.endswith(graph.INPUT) else before}); the ops "
            f"between ({ops}) have no PyTorch module of their own, so they are the bracket"
        )
        fix = "fix the op between them (a custom Function's symbolic, an export of an op no module owns)"
    evidence = [
        *facts,
        told,
        *(() if s.stand_in else (_runtime_there(s, value),)),
        downstream(rows, node.name),
    ]
    summary = (
        f"export fault {where}: onnx's reference differs from PyTorch by "
        f"{torch_errs[value].max_abs:.2g} at {value}; {fix}"
    )
    return Finding(
        FaultClass.EXPORT,
        node,
        summary,
        tuple(evidence),
        tuple(rows),
        repro_graph="bundle",
        repro_inputs=tuple(inputs),
        repro_outputs=(value,),
        repro_values=s.reference,
        repro_expected={value: s.torch.get(value, s.torch_out)},
        expected_from="PyTorch's module output",
    )


def _shown(label: str) -> str:
    """A PyTorch value's label as the report says it: ``b`` for ``b#input``, ``mul`` for ``fx:mul``."""
    return label.removesuffix(graph.INPUT).removeprefix(graph.FX)


def _runtime_there(s: Sample, value: str) -> str:
    """What the target's runtime says at ``value``, beside onnx's reference (evidence, not assumed)."""
    assert s.reference is not None
    if s.off is None or value not in s.off:
        return "the target's runtime was not observed there"
    there = walk.error(s.off[value], s.reference[value], s.atol, s.rtol)
    if there.out:
        return f"the target's runtime differs from onnx's reference there too, by {fmt(there)}"
    return (
        f"the target's runtime agrees with onnx's reference there ({fmt(there)}): "
        "the graph itself computes something else"
    )


def runtime(
    s: Sample, errs: Mapping[str, walk.Error], within: set[str], facts: list[str], ref_vs_torch: walk.Error
) -> Finding:
    assert s.reference is not None
    node = walk.first_divergence(s.graph, errs, within)
    if node is None:
        return Finding(FaultClass.RUNTIME, None, "runtime fault: no single node diverges first", tuple(facts))
    value = next(o for o in node.outputs if o in errs and errs[o].out)
    rows = walk.path(s.graph, node, s.output, errs)
    denormal = [i for i in node.inputs if i in s.reference and _subnormal(s.reference[i])]
    evidence = [
        *facts,
        f"{node.name} is the first node out of tolerance with every input within it: "
        f"{value} differs by {fmt(errs[value])}",
        downstream(rows, node.name),
    ]
    if denormal:
        evidence.append(
            f"its input {denormal[0]} holds subnormal floats (|x| < 1.2e-38): "
            "a runtime that flushes denormals to zero reads them as 0"
        )
    summary = (
        f"runtime fault at {name(node)}: {s.runtime} {s.release} differs from onnx's reference by "
        f"{errs[value].max_abs:.2g} while the reference matches {s.source} to {ref_vs_torch.max_abs:.1g}"
    )
    return Finding(
        FaultClass.RUNTIME,
        node,
        summary,
        tuple(evidence),
        tuple(rows),
        repro_graph="bundle",
        repro_inputs=tuple(i for i in node.inputs if i),
        repro_outputs=(value,),
        repro_values=s.reference,
        repro_expected={value: s.reference[value]},
        expected_from="onnx's ReferenceEvaluator",
    )


def _subnormal(arr: np.ndarray) -> bool:
    a = np.asarray(arr)
    if a.dtype.kind != "f" or not a.size:
        return False
    tiny = np.finfo(a.dtype).tiny
    return bool(np.any((a != 0) & (np.abs(a) < tiny)))


def optimization(s: Sample, errs: Mapping[str, walk.Error], facts: list[str]) -> Finding:
    assert s.optimized is not None and s.reference is not None
    opt_graph, _ = s.optimized
    node = walk.first_divergence(opt_graph, errs)
    if node is None:
        return Finding(
            FaultClass.OPTIMIZATION,
            None,
            "optimization fault: the optimized graph's values could not be matched",
            tuple(facts),
        )
    value = next(o for o in node.outputs if o in errs and errs[o].out)
    fused = region(opt_graph, value, errs)
    first = node
    node = next((n for n in fused if n.op_type not in LAYOUT), node)  # the fused kernel, not a transpose
    replaced = region(s.graph, value, {i: walk.Error(0, 0) for i in boundary(fused, opt_graph)})
    inputs = boundary(replaced, s.graph)
    rows = walk.path(opt_graph, first, s.output, errs)
    names = ", ".join(f"{n.name} ({n.op_type})" for n in replaced) or "none found"
    made = ", ".join(f"{n.name} ({n.op_type})" for n in fused)
    evidence = [
        *facts,
        f"in the graph the target optimized, {value} (made by {first.name}) is the first value out of "
        f"tolerance: it differs by {fmt(errs[value])}; {made} made it",
        f"they replaced {names} of the bundle's graph",
        downstream(rows, first.name),
    ]
    summary = (
        f"optimization fault at {node.name} ({node.op_type}), which {s.runtime} {s.release} made of {names}: "
        f"{value} differs from onnx's reference by {errs[value].max_abs:.2g}; "
        "with optimizations off it does not"
    )
    return Finding(
        FaultClass.OPTIMIZATION,
        node,
        summary,
        tuple(evidence),
        tuple(rows),
        repro_graph="bundle",
        repro_inputs=tuple(inputs),
        repro_outputs=(value,),
        repro_values=s.reference,
        repro_expected={value: s.reference[value]},
        expected_from="onnx's ReferenceEvaluator",
    )


LAYOUT = frozenset(
    {"Transpose", "Reshape", "Identity", "Squeeze", "Unsqueeze", "Flatten", "ReorderInput", "ReorderOutput"}
)
"""Ops that move data and compute nothing: the node a fault names is the fused kernel beside them."""


def precision(s: Sample, final: walk.Error) -> Finding:
    if s.reference is None or s.fp32_graph is None:
        return Finding(
            None,
            None,
            "",
            (),
            stopped="the fp32 graph's values were not available to compare the derived precision with",
        )
    values = _as_read(s.graph, s.off) if s.off is not None else {}
    errs = walk.errors(values, s.reference, s.atol, s.rtol)
    within = s.graph.ancestors_of(s.output)
    node = walk.largest_jump(s.graph, errs, within)
    facts = [f"the {s.precision} graph as it ran differs from {s.source} by {fmt(final)} at {s.output}"]
    if node is None:
        return Finding(
            FaultClass.PRECISION,
            None,
            "precision fault: no node of the derived graph stands out",
            tuple(facts),
        )
    value = max((o for o in node.outputs if o in errs), key=lambda o: errs[o].relative)
    group = region(s.graph, value, errs)
    quantized = next(
        (n for n in group if n.op_type in QUANTIZED_COMPUTE),
        next((n for n in group if n.op_type in QUANTIZED), group[-1] if group else node),
    )
    fp32_node = s.fp32_graph.producer().get(value) or node
    rows = walk.path(s.graph, node, s.output, errs)
    how = f"where the error grows most ({errs[value].relative:.2g} of its largest magnitude)"
    evidence = [
        *facts,
        f"against the fp32 graph, {value} is {how}: {fmt(errs[value])}, "
        f"made by {quantized.name} ({quantized.op_type}) in "
        + ", ".join(f"{n.name} ({n.op_type})" for n in group),
        f"keeping {fp32_node.name} ({fp32_node.op_type}) in fp32 removes that node's quantization",
        downstream(rows, node.name),
    ]
    summary = (
        f"precision fault at {name(fp32_node)}: its {s.precision} form ({quantized.op_type}) "
        "differs from the "
        f"fp32 graph by {errs[value].max_abs:.2g} at {value}; keep it in fp32"
    )
    inputs = boundary(group, s.graph)
    return Finding(
        FaultClass.PRECISION,
        fp32_node,
        summary,
        tuple(evidence),
        tuple(rows),
        repro_graph="bundle",
        repro_inputs=tuple(inputs),
        repro_outputs=(value,),
        repro_values={**s.reference, **values},
        repro_expected={value: s.reference[value]},
        expected_from="the fp32 graph (onnx's ReferenceEvaluator)",
        repro_tolerance=s.fp32_tolerance,
    )


def _as_read(g: graph.Graph, values: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A QDQ graph's values as its consumers read them: a value quantized (QuantizeLinear, then
    DequantizeLinear) is what the DequantizeLinear hands on. The quantizer keeps the fp32 graph's name
    on the value before the QuantizeLinear, whose meaning may differ (a Conv's output where a ReLU was
    folded into the QuantizeLinear's clipping at zero)."""
    consumers = g.consumers()
    read = dict(values)
    for n in g.nodes:
        if n.op_type != "QuantizeLinear" or not n.inputs or n.inputs[0] not in values:
            continue
        dq = next((c for c in consumers.get(n.outputs[0], []) if c.op_type == "DequantizeLinear"), None)
        if dq is not None and dq.outputs and dq.outputs[0] in values:
            read[n.inputs[0]] = values[dq.outputs[0]]
    return read


QUANTIZED_COMPUTE = frozenset(
    {
        "MatMulInteger",
        "ConvInteger",
        "QLinearConv",
        "QLinearMatMul",
        "DynamicQuantizeMatMul",
        "MatMulIntegerToFloat",
    }
)
QUANTIZED = frozenset(
    {
        "MatMulInteger",
        "ConvInteger",
        "QLinearConv",
        "QLinearMatMul",
        "DynamicQuantizeLinear",
        "QuantizeLinear",
        "DequantizeLinear",
        "DynamicQuantizeMatMul",
        "MatMulIntegerToFloat",
    }
)
