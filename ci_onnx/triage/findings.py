"""What a triage compares and what it concludes, as values: the sample's references (``Sample``) and
a class with its evidence and what to reproduce (``Finding``), with the helpers that word them.

Pure: every value arrives as an array (name → array per reference); nothing here runs anything.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Container, Mapping

import numpy as np

from ci_onnx.contracts.triage_contract import FaultClass, NodeError
from ci_onnx.triage import walk
from ci_onnx.triage.graph import Graph, Node


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
    source: str = "PyTorch"
    """Who made the bundle's expected outputs: PyTorch, or for an ONNX-only bundle its test data."""
    everywhere: tuple[np.ndarray, np.ndarray] | None = None
    """The target's output as it ran and PyTorch's, over every test data set: what a tolerance must pass."""
    stand_in: bool = False
    torch_labels: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """What each of ``torch``'s values is in PyTorch: ``a`` (a module's output), ``b#input`` (its
    input), ``features.1`` for a module fused into another (ci_onnx.triage.graph.module_values)."""
    runtime: str = "onnxruntime"
    """The engine that ran the target (``openvino`` for the openvino runner kind): what faults name."""
    """``reference`` is the target with optimizations off (onnx's reference could not run the graph):
    an export fault and a runtime fault cannot be told apart."""


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


def fmt(e: walk.Error) -> str:
    return f"{e.max_abs:.2g} ({times(e.share)} the tolerance)"


def times(share: float) -> str:
    return "inf×" if not math.isfinite(share) else f"{share:.3g}×"


def name(n: Node) -> str:
    where = (f", from {n.module}" if n.module else "") + (f" at {n.source}" if n.source else "")
    return f"{n.name} ({n.op_type}{where})"


def region(graph: Graph, value: str, known: Container[str]) -> list[Node]:
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


def downstream(rows: tuple[NodeError, ...] | list[NodeError], start: str) -> str:
    """How the error goes from the node ``start`` to the failing output along the path (errors grow
    downstream: the first crossing is not the only figure that matters)."""
    at = next((i for i, r in enumerate(rows) if r.node == start), 0 if rows else None)
    if at is None or at == len(rows) - 1:
        return "the failing output is that node's own"
    first, last = rows[at], rows[-1]
    way = "grows" if last.share > first.share else "shrinks"
    return (
        f"from {first.node} ({times(first.share)} the tolerance) the error {way} to {times(last.share)} at "
        f"{last.value} over {len(rows) - 1 - at} node(s) (each in the path table)"
    )
