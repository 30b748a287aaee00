"""What a triage may hold: which of the graph's values it compares, within ``verify.triage_memory_mb``
and ``verify.triage_disk_mb``.

Every intermediate exposed at once is what runs out of memory on real models: the target's values are
written to disk by its runtime and read back once per graph it runs, and onnx's ReferenceEvaluator
holds every value of the graph while it runs. So the sizes of the values are known first (shape
inference on the failing sample's own shapes, the weights left out), and where they do not all fit,
the values that leave a module (what PyTorch has a counterpart for) and the graph's outputs are
exposed first, then the others in bisection order (the middle of each stretch first), as far as the
limits allow. The walk then names the nearest compared value, and the triage says the limit cut it.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ci_onnx.triage.graph import Graph

MB = 1 << 20
HELD = 4
"""Copies of the compared values the triage holds at once: the target's with optimizations off, the
graph it optimized, onnx's reference and PyTorch's."""
SMALL_INITIALIZER = 4096
"""Initializers up to this many bytes stay in the graph whose shapes are inferred (shape tensors,
axes); larger ones (weights) are given by type and shape only."""


@dataclasses.dataclass(frozen=True)
class Bound:
    exposed: frozenset[str] | None
    """The node outputs to compare; None: every one."""
    reference: bool
    """Whether onnx's ReferenceEvaluator, which holds every value while it runs, fits in memory."""
    note: str = ""
    """What a limit cut, where one did."""
    total_mb: float = 0.0
    """Every node output of the graph on the sample."""
    exposed_mb: float = 0.0
    room: float = 0.0
    """The bytes of values one run of the target may expose."""
    size: Mapping[str, int] = dataclasses.field(default_factory=dict)
    """Each value's bytes (an unknown size counted as the largest known)."""

    def fitting(self, values: Sequence[str]) -> list[str]:
        """As many of ``values``, in bisection order, as one run may expose (one at least)."""
        chosen: list[str] = []
        used = 0
        for v in _bisection(values):
            if not chosen or used + self.size.get(v, 0) <= self.room:
                chosen.append(v)
                used += self.size.get(v, 0)
        return chosen


def sizes(model: Any, feeds: Mapping[str, np.ndarray]) -> dict[str, int]:
    """The bytes of each value of the main graph on ``feeds``, from shape inference with the inputs'
    own shapes; a value whose shape stays unknown is absent."""
    import onnx
    from onnx import helper

    g = model.graph
    small, given = [], []
    for init in g.initializer:
        if _bytes(init.data_type, init.dims) <= SMALL_INITIALIZER:
            small.append(init)
        else:
            given.append(helper.make_tensor_value_info(init.name, init.data_type, list(init.dims)))
    inputs = [
        helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(arr.dtype), list(arr.shape))
        for name, arr in feeds.items()
    ]
    shapes_only = helper.make_model(
        helper.make_graph(list(g.node), g.name, [*inputs, *given], [], small),
        opset_imports=list(model.opset_import),
        ir_version=model.ir_version,
        functions=list(model.functions),
    )
    try:
        inferred = onnx.shape_inference.infer_shapes(shapes_only, strict_mode=False, data_prop=True)
    except Exception:  # an op shape inference does not know: every size unknown
        return {}
    found = {}
    for vi in [*inferred.graph.value_info, *inferred.graph.output]:
        t = vi.type.tensor_type
        if vi.type.HasField("tensor_type") and t.HasField("shape"):
            dims = [d.dim_value if d.HasField("dim_value") else -1 for d in t.shape.dim]
            if all(d >= 0 for d in dims):
                found[vi.name] = _bytes(t.elem_type, dims)
    return found


def _bytes(elem: int, dims: Sequence[int]) -> int:
    from onnx import helper

    try:
        itemsize = np.dtype(helper.tensor_dtype_to_np_dtype(elem)).itemsize
    except Exception:  # a type numpy has no name for (bfloat16, float8): counted at four bytes
        itemsize = 4
    return itemsize * math.prod(dims)


def held_mb() -> float:
    """What this process already holds at its peak (the interpreter, onnx, the graph, the sample)."""
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / MB if sys.platform == "darwin" else peak / 1024  # bytes on macOS, KiB on Linux


def bound(
    g: Graph,
    size: Mapping[str, int],
    memory_mb: float,
    disk_mb: float,
    *,
    runs: int,
    keep: Sequence[str],
    limit_mb: float | None = None,
) -> Bound:
    """Which values to compare within the limits: ``memory_mb`` for the values (``limit_mb``, the
    configured limit, less what the process holds already), ``runs`` graphs write the target's values
    to disk; ``keep`` (the failing output) is compared whatever it takes."""
    memory_mb = max(memory_mb, 0.0)
    values = list(dict.fromkeys(o for n in g.nodes for o in n.outputs if o))
    largest = max(size.values(), default=0)
    of = {v: size.get(v, largest) for v in values}  # an unknown size counts as the largest known
    total = sum(of.values())
    room = min(memory_mb * MB / HELD, disk_mb * MB / max(runs, 1))
    if total <= room:
        return Bound(None, total <= memory_mb * MB - 2 * total, "", total / MB, total / MB)
    chosen: list[str] = []
    used = 0
    for v in [*keep, *_first(g), *_bisection([v for v in values if v not in keep])]:
        if v in chosen or v not in of:
            continue
        if used + of[v] <= room or v in keep:
            chosen.append(v)
            used += of[v]
    which = "triage_memory_mb" if memory_mb * MB / HELD <= disk_mb * MB / max(runs, 1) else "triage_disk_mb"
    limit = (limit_mb or memory_mb) if which == "triage_memory_mb" else disk_mb
    reference = total <= memory_mb * MB - 2 * used
    note = (
        f"verify.{which} ({limit:g} MB) cut the search short: {len(chosen)} of {len(values)} values compared "
        f"({used / MB:.0f} of {total / MB:.0f} MB); the node named is the nearest compared one"
        + ("" if reference else ", and onnx's reference (which holds every value at once) did not run")
    )
    return Bound(frozenset(chosen), reference, note, total / MB, used / MB, room, of)


def _first(g: Graph) -> list[str]:
    """The values PyTorch can have a counterpart for, in topological order: those that leave the
    module whose node made them, and the graph's outputs."""
    module_of = {o: n.module for n in g.nodes for o in n.outputs if o}
    consumers = g.consumers()
    leaving = [
        o for n in g.nodes for o in n.outputs if o and any(c.module != n.module for c in consumers.get(o, []))
    ]
    return [*g.outputs, *(v for v in leaving if module_of.get(v))]


def _bisection(values: Sequence[str]) -> list[str]:
    """``values`` with the middle of each stretch first: any prefix spreads over the whole graph."""
    out: list[str] = []
    spans = [(0, len(values))]
    while spans:
        nxt = []
        for lo, hi in spans:
            if lo >= hi:
                continue
            mid = (lo + hi) // 2
            out.append(values[mid])
            nxt += [(lo, mid), (mid + 1, hi)]
        spans = nxt
    return out
