"""Whose fault a divergence is: the comparisons of one triaged sample, turned into a fault class with
its evidence, the first diverging node, the error along the path, and what to reproduce.

Pure: every value arrives as an array (name → array per reference); nothing here runs anything.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

import numpy as np

from ci_onnx.triage import walk
from ci_onnx.triage.contract import FaultClass, NodeError
from ci_onnx.triage.graph import Graph, Node

FEW = 10.0
"""'A few times the tolerance': below this share everywhere, with a smooth growth, it is the bound."""


@dataclasses.dataclass(frozen=True)
class Sample:
    """Everything compared on the triaged sample, by reference."""

    output: str
    atol: float
    rtol: float
    graph: Graph
    """The graph the bundle holds (for a derived precision: its derived graph)."""
    torch_out: np.ndarray
    """The bundle's PyTorch output on the sample."""
    as_run: np.ndarray
    """The target's output as it ran (its own session settings, the graph not exposed)."""
    reference: Mapping[str, np.ndarray] | None = None
    """onnx's ReferenceEvaluator, every value (for a derived precision: of the fp32 graph)."""
    off: Mapping[str, np.ndarray] | None = None
    """The target with graph optimizations off, every value exposed."""
    torch: Mapping[str, np.ndarray] = dataclasses.field(default_factory=dict)
    """PyTorch module outputs, by the ONNX value each module hands on."""
    optimized: tuple[Graph, Mapping[str, np.ndarray]] | None = None
    """The graph the target optimized and ran, with its values (run as saved)."""
    fp32_graph: Graph | None = None
    """For a derived precision: the fp32 graph its values are compared against."""
    release: str = ""
    precision: str = "fp32"
    fp32_tolerance: tuple[float, float] = (0.0, 0.0)
    """For a derived precision: the fp32 cell's (atol, rtol), what its reproduction compares with."""
    everywhere: tuple[np.ndarray, np.ndarray] | None = None
    """The target's output as it ran and PyTorch's, over every test data set: what a tolerance must pass."""


@dataclasses.dataclass(frozen=True)
class Finding:
    fault: FaultClass | None
    node: Node | None
    summary: str
    evidence: tuple[str, ...]
    path: tuple[NodeError, ...] = ()
    suggested: dict[str, float] = dataclasses.field(default_factory=dict)
    repro_graph: str = ""
    """Which graph to extract from: ``bundle``, ``fp32`` or nothing."""
    repro_inputs: tuple[str, ...] = ()
    repro_outputs: tuple[str, ...] = ()
    repro_values: Mapping[str, np.ndarray] = dataclasses.field(default_factory=dict)
    repro_expected: Mapping[str, np.ndarray] = dataclasses.field(default_factory=dict)
    expected_from: str = ""
    as_run: bool = True
    """Reproduce with the target's own optimization level (else with optimizations off)."""
    repro_tolerance: tuple[float, float] | None = None
    """The (atol, rtol) the reproduction compares with, where it is not the cell's."""
    stopped: str = ""


def _fmt(e: walk.Error) -> str:
    return f"{e.max_abs:.2g} ({_times(e.share)} the tolerance)"


def _times(share: float) -> str:
    return "inf×" if not math.isfinite(share) else f"{share:.3g}×"


def _name(n: Node) -> str:
    where = f", from {n.module}" + (f" at {n.source}" if n.source else "") if n.module else ""
    return f"{n.name} ({n.op_type}{where})"


def region(graph: Graph, value: str, known: Mapping[str, walk.Error]) -> list[Node]:
    """The nodes that make ``value`` from the nearest values ``known`` holds (going up through the
    values it does not): a fused or quantized group, in topological order."""
    made_by = graph.producer()
    names: set[str] = set()
    todo = [value]
    while todo:
        n = made_by.get(todo.pop())
        if n is None or n.name in names:
            continue
        names.add(n.name)
        todo.extend(i for i in n.inputs if i not in known and i not in graph.initializers)
    return [n for n in graph.nodes if n.name in names]


def boundary(nodes: list[Node], graph: Graph) -> list[str]:
    made = {o for n in nodes for o in n.outputs}
    return [i for n in nodes for i in n.inputs if i and i not in made and i not in graph.initializers]


def classify(s: Sample) -> Finding:
    final_torch = walk.error(s.as_run, s.torch_out, s.atol, s.rtol)
    if s.precision != "fp32":
        return _precision(s, final_torch)
    if s.reference is None:
        return Finding(None, None, "", (), stopped="onnx's ReferenceEvaluator could not run the graph")
    ref, out = s.reference, s.output
    within = s.graph.ancestors_of(out)
    ref_vs_torch = walk.error(ref[out], s.torch_out, s.atol, s.rtol)
    off_errs = walk.errors(s.off, ref, s.atol, s.rtol) if s.off is not None else {}
    opt_errs = walk.errors(s.optimized[1], ref, s.atol, s.rtol) if s.optimized is not None else {}
    torch_errs = walk.errors(ref, s.torch, s.atol, s.rtol) if s.torch else {}
    facts = [
        f"the target as it ran differs from PyTorch by {_fmt(final_torch)} at {out}",
        f"onnx's reference differs from PyTorch by {_fmt(ref_vs_torch)}",
    ]
    worst_node = max((e.share for d in (off_errs, opt_errs, torch_errs) for e in d.values()), default=0.0)
    if final_torch.share <= FEW and worst_node <= FEW:
        return _tolerance(s, final_torch, off_errs or opt_errs, within, facts)
    if ref_vs_torch.out:
        return _export(s, torch_errs, within, facts)
    off_out = off_errs.get(out)
    if off_out is not None and off_out.out:
        return _runtime(
            s,
            off_errs,
            within,
            [*facts, f"with optimizations off it differs from the reference by {_fmt(off_out)}"],
            ref_vs_torch,
        )
    if s.optimized is not None and walk.error(s.as_run, ref[out], s.atol, s.rtol).out:
        return _optimization(
            s,
            opt_errs,
            [
                *facts,
                "with optimizations off it matches the reference"
                + (f" ({_fmt(off_out)})" if off_out else ""),
            ],
        )
    return Finding(
        None, None, "", tuple(facts), stopped="no reference isolates the divergence on this sample"
    )


def _suggest(got: np.ndarray, ref: np.ndarray, rtol: float) -> dict[str, float]:
    """The smallest atol (two significant digits, rounded up) that passes with ``rtol`` kept."""
    g, r = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    need = float(np.max(np.abs(g - r) - rtol * np.abs(r), initial=0.0))
    if need <= 0:
        return {"atol": 0.0, "rtol": rtol}
    digits = 10 ** (math.floor(math.log10(need)) - 1)
    return {"atol": float(f"{math.ceil(need / digits) * digits:.2g}"), "rtol": rtol}


def _tolerance(
    s: Sample, final: walk.Error, errs: Mapping[str, walk.Error], within: set[str], facts: list[str]
) -> Finding:
    made_by = s.graph.producer()
    grow = walk.largest_jump(s.graph, errs, within) or made_by.get(s.output)
    rows = walk.path(s.graph, grow, s.output, errs) if grow is not None and errs else []
    smooth = walk.smooth(rows)
    suggested = _suggest(*(s.everywhere or (s.as_run, s.torch_out)), s.rtol)
    worst = max((e.share for e in errs.values()), default=0.0)
    evidence = [
        *facts,
        f"every node is within {FEW:g}× the tolerance (the worst {_times(worst)})",
        "the error grows smoothly along the path"
        if smooth
        else "the error grows along the path, with one larger step",
        f"atol {suggested['atol']:g} (rtol {suggested['rtol']:g}) would pass: the differences are rounding, "
        "not a wrong result, if the application tolerates them",
    ]
    summary = (
        f"tolerance: {s.output} differs from PyTorch by {final.max_abs:.2g} "
        f"({_times(final.share)} the tolerance) "
        f"and no node leaves {FEW:g}× it; atol {suggested['atol']:g} would pass"
    )
    return Finding(
        FaultClass.TOLERANCE,
        grow,
        summary,
        tuple(evidence),
        tuple(rows),
        suggested,
        repro_graph="",
        stopped="",
    )


def _export(s: Sample, torch_errs: Mapping[str, walk.Error], within: set[str], facts: list[str]) -> Finding:
    assert s.reference is not None
    node = walk.first_divergence(s.graph, torch_errs, within) if torch_errs else None
    if node is None:
        note = (
            "PyTorch's module outputs were not available"
            if not torch_errs
            else "no module output diverges first"
        )
        summary = (
            f"export fault: onnx's reference differs from PyTorch at {s.output} ({note} to name the node)"
        )
        return Finding(FaultClass.EXPORT, s.graph.producer().get(s.output), summary, tuple(facts), stopped="")
    value = next(o for o in node.outputs if o in torch_errs and torch_errs[o].out)
    group = region(s.graph, value, torch_errs)
    rows = walk.path(s.graph, node, s.output, torch_errs)
    evidence = [
        *facts,
        f"PyTorch's output of {node.module or 'the module'} differs from onnx's reference at {value} "
        f"by {_fmt(torch_errs[value])} while its inputs match",
        "onnxruntime agrees with onnx's reference there: the graph itself computes something else",
    ]
    summary = (
        f"export fault at {_name(node)}: onnx's reference differs from PyTorch by "
        f"{torch_errs[value].max_abs:.2g} "
        f"at {value} while its inputs match; fix the model or the export of {node.module or node.name}"
    )
    inputs = boundary(group, s.graph)
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
        repro_expected={value: s.torch[value]},
        expected_from="PyTorch's module output",
    )


def _runtime(
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
        f"{value} differs by {_fmt(errs[value])}",
    ]
    if denormal:
        evidence.append(
            f"its input {denormal[0]} holds subnormal floats (|x| < 1.2e-38): "
            "a runtime that flushes denormals to zero reads them as 0"
        )
    summary = (
        f"runtime fault at {_name(node)}: onnxruntime {s.release} differs from onnx's reference by "
        f"{errs[value].max_abs:.2g} while the reference matches PyTorch to {ref_vs_torch.max_abs:.1g}"
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


def _optimization(s: Sample, errs: Mapping[str, walk.Error], facts: list[str]) -> Finding:
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
    inputs = boundary(fused, opt_graph)
    replaced = region(s.graph, value, {i: walk.Error(0, 0) for i in inputs})
    rows = walk.path(opt_graph, node, s.output, errs)
    names = ", ".join(f"{n.name} ({n.op_type})" for n in replaced) or "none found"
    evidence = [
        *facts,
        f"in the graph the target optimized, {node.name} ({node.op_type}) is the first node out of "
        f"tolerance: {value} differs by {_fmt(errs[value])}",
        f"it replaced {names} of the bundle's graph",
    ]
    summary = (
        f"optimization fault at {node.name} ({node.op_type}), which onnxruntime {s.release} made of {names}: "
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


def _precision(s: Sample, final: walk.Error) -> Finding:
    if s.reference is None or s.fp32_graph is None:
        return Finding(
            None,
            None,
            "",
            (),
            stopped="the fp32 graph's values were not available to compare the derived precision with",
        )
    values = s.off if s.off is not None else {}
    errs = walk.errors(values, s.reference, s.atol, s.rtol)
    within = s.graph.ancestors_of(s.output)
    node = walk.largest_jump(s.graph, errs, within)
    facts = [f"the {s.precision} graph as it ran differs from PyTorch by {_fmt(final)} at {s.output}"]
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
        f"against the fp32 graph, {value} is {how}: {_fmt(errs[value])}, "
        f"made by {quantized.name} ({quantized.op_type}) in "
        + ", ".join(f"{n.name} ({n.op_type})" for n in group),
        f"keeping {fp32_node.name} ({fp32_node.op_type}) in fp32 removes that node's quantization",
    ]
    summary = (
        f"precision fault at {_name(fp32_node)}: its {s.precision} form ({quantized.op_type}) "
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
