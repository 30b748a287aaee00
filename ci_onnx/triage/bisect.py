"""Narrowing a triage that a memory or disk limit cut short (ci_onnx.triage.bounds): the values
between the node the first comparison named and the nearest compared values upstream are exposed in
further runs of the target, as many at a time as the limit allows, until the node named is one whose
inputs were all compared. Each run holds only those values, the failing output and the values that
feed them, so the memory stays within the limit however large the graph.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

import numpy as np

from ci_onnx.contracts.triage_contract import FaultClass
from ci_onnx.triage import classify
from ci_onnx.triage.bounds import Bound
from ci_onnx.triage.findings import Finding, Sample, region

ROUNDS = 8
"""Runs of the target at most: each halves the stretch or more, so 8 cover 256 values at a time."""


def narrowed(
    s: Sample,
    f: Finding,
    limit: Bound,
    reference: Mapping[str, np.ndarray],
    expose: Callable[[frozenset[str]], dict[str, np.ndarray]],
    notes: list[str],
) -> Finding:
    """``f`` with its node narrowed down where a runtime fault was named on a value the limit kept
    and values between it and the compared ones were left out; ``reference``: every value of onnx's
    reference; ``expose(values)``: the target's values (optimizations off)."""
    start, rounds = f.node, 0
    while rounds < ROUNDS and f.fault is FaultClass.RUNTIME and f.node is not None and s.off is not None:
        known = set(s.off)
        value = next((o for o in f.node.outputs if o in known), None)
        if value is None:
            break
        group = region(s.graph, value, known)
        missing = [o for n in group for o in n.outputs if o and o not in known and o in reference]
        if not missing:
            break
        got = expose(frozenset(limit.fitting(missing)))
        rounds += 1
        feeding = {i for n in group for i in n.inputs} | {o for n in group for o in n.outputs} | {s.output}
        off = {k: v for k, v in s.off.items() if k in feeding} | got
        s = dataclasses.replace(s, off=off, reference={k: reference[k] for k in off if k in reference})
        again = classify.classify(s)
        if again.fault is not FaultClass.RUNTIME or again.node is None:
            break
        f = again
    if rounds and f.node is not start and f.node is not None:
        notes.append(
            f"narrowed within the limit: {rounds} more run(s) of the target exposed the values the limit "
            f"had left out between the nearest compared ones, and named {f.node.name}"
        )
    return f
