"""The walk: compare two sets of values node by node, in topological order, and name the first node
whose output leaves the tolerance while every input it has in both sets is within it.

A node's tolerance is the failing output's (atol, rtol), with atol scaled by the value's largest
magnitude where that is above 1: the rounding of an intermediate grows with its size, and a
pre-softmax score of 300 cannot be held to the absolute bound of a probability. Integer and boolean
values must be equal. Pure numpy: both sides' values arrive as arrays.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Mapping, Sequence

import numpy as np

from ci_onnx.contracts.triage_contract import NodeError
from ci_onnx.triage.graph import Graph, Node

INF = float("inf")


@dataclasses.dataclass(frozen=True)
class Error:
    max_abs: float
    share: float
    """max |got − ref| / bound; above 1: out of tolerance (inf: shapes, NaNs or integers differ)."""
    scale: float = 0.0
    """max |ref|: what the error is relative to."""

    @property
    def relative(self) -> float:
        """max |got − ref| / max |ref|: the error, whatever the tolerance."""
        return self.max_abs / self.scale if self.scale > 0 else (0.0 if self.max_abs == 0 else INF)

    @property
    def out(self) -> bool:
        return self.share > 1.0


CHUNK = 1 << 18
"""Elements compared at a time: the float64 copies of a comparison stay a few MB, whatever the value."""


def error(got: np.ndarray, ref: np.ndarray, atol: float, rtol: float) -> Error:
    got, ref = np.asarray(got), np.asarray(ref)
    if got.shape != ref.shape:
        return Error(INF, INF)
    if got.size == 0:
        return Error(0.0, 0.0)
    if ref.dtype.kind not in "fc" or got.dtype.kind not in "fc":
        same = bool(np.array_equal(got, ref))
        if same:
            return Error(0.0, 0.0)
        try:
            diff = float(np.max(np.abs(got.astype(np.float64) - ref.astype(np.float64))))
        except (TypeError, ValueError):
            diff = INF
        return Error(diff, INF)
    flat_g, flat_r = got.reshape(-1), ref.reshape(-1)
    chunks = [(flat_g[i : i + CHUNK], flat_r[i : i + CHUNK]) for i in range(0, flat_g.size, CHUNK)]
    peak, any_finite = 0.0, False
    for cg, cr in chunks:  # first the scale (the largest finite reference value) and the special values
        g, r = cg.astype(np.float64), cr.astype(np.float64)
        finite = np.isfinite(g) & np.isfinite(r)
        if (~finite & ~((np.isnan(g) & np.isnan(r)) | (g == r))).any():
            return Error(INF, INF)
        if finite.any():
            any_finite = True
            peak = max(peak, float(np.max(np.abs(r[finite]))))
    if not any_finite:
        return Error(0.0, 0.0)
    scale = max(1.0, peak)
    worst_d, worst_ratio = 0.0, 0.0
    for cg, cr in chunks:
        g, r = cg.astype(np.float64), cr.astype(np.float64)
        finite = np.isfinite(g) & np.isfinite(r)
        if not finite.any():
            continue
        d = np.abs(g - r)[finite]
        bound = atol * scale + rtol * np.abs(r[finite])
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(bound > 0, d / np.where(bound > 0, bound, 1.0), np.where(d > 0, INF, 0.0))
        worst_d, worst_ratio = max(worst_d, float(d.max())), max(worst_ratio, float(ratio.max()))
    return Error(worst_d, worst_ratio, peak)


def errors(
    got: Mapping[str, np.ndarray], ref: Mapping[str, np.ndarray], atol: float, rtol: float
) -> dict[str, Error]:
    """Every value both sides hold, compared."""
    return {k: error(got[k], ref[k], atol, rtol) for k in got if k in ref}


def first_divergence(graph: Graph, errs: Mapping[str, Error], within: set[str] | None = None) -> Node | None:
    """The first node (in topological order, among ``within`` when given) with an output out of
    tolerance and no input known to be out."""
    for n in graph.nodes:
        if within is not None and n.name not in within:
            continue
        if any(errs[o].out for o in n.outputs if o in errs) and not any(
            errs[i].out for i in n.inputs if i in errs
        ):
            return n
    return None


def largest_jump(
    graph: Graph, errs: Mapping[str, Error], within: set[str] | None = None, floor: float = 1e-3
) -> Node | None:
    """The node whose output's relative error grows most over its inputs' (an input without error
    counts as ``floor``): where a derived precision loses most, whatever its tolerance says."""
    best, best_gain = None, 1.0
    for n in graph.nodes:
        if within is not None and n.name not in within:
            continue
        outs = [_finite(errs[o].relative) for o in n.outputs if o in errs]
        if not outs:
            continue
        ins = [_finite(errs[i].relative) for i in n.inputs if i in errs]
        gain = max(outs) / max(max(ins, default=0.0), floor)
        if gain > best_gain:
            best, best_gain = n, gain
    return best


def path(
    graph: Graph, start: Node, to_value: str, errs: Mapping[str, Error], before: int = 2
) -> list[NodeError]:
    """The nodes from ``start`` down to the node that makes ``to_value`` (the shortest way through
    its consumers), with ``before`` nodes upstream of it, each with its error."""
    made_by = graph.producer()
    consumers = graph.consumers()
    chain: list[Node] = [start]
    previous: dict[str, str] = {}
    frontier = [start]
    seen = {start.name}
    goal = made_by.get(to_value)
    while frontier and goal is not None and goal.name not in seen:
        nxt: list[Node] = []
        for n in frontier:
            for o in n.outputs:
                for c in consumers.get(o, []):
                    if c.name not in seen:
                        seen.add(c.name)
                        previous[c.name] = n.name
                        nxt.append(c)
        frontier = nxt
    if goal is not None and goal.name in previous:
        way = [goal.name]
        while way[-1] != start.name:
            way.append(previous[way[-1]])
        by_name = {n.name: n for n in graph.nodes}
        chain = [by_name[w] for w in reversed(way)]
    upstream: list[Node] = []
    cursor = start
    for _ in range(before):
        inputs = [i for i in cursor.inputs if i in made_by and i in errs]
        if not inputs:
            break
        cursor = made_by[max(inputs, key=lambda i: _finite(errs[i].share))]
        upstream.insert(0, cursor)
    return [row for n in [*upstream, *chain] if (row := _row(n, errs)) is not None]


def _row(n: Node, errs: Mapping[str, Error]) -> NodeError | None:
    outs = [o for o in n.outputs if o in errs]
    if not outs:
        return None
    worst = max(outs, key=lambda o: _finite(errs[o].share))
    e = errs[worst]
    return NodeError(n.name, n.op_type, worst, _json_safe(e.max_abs), _json_safe(e.share))


def _finite(x: float) -> float:
    return x if math.isfinite(x) else 1e300


def _json_safe(x: float) -> float:
    return x if math.isfinite(x) else 1e300


def smooth(rows: Sequence[NodeError], factor: float = 10.0) -> bool:
    """Whether the error grows without a jump of more than ``factor`` from one node to the next."""
    shares = [r.share for r in rows]
    return all(b <= max(a, 1e-6) * factor for a, b in itertools.pairwise(shares))
