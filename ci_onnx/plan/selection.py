"""Choosing targets of a plan by id or glob (``--target``, ``--only``)."""

from __future__ import annotations

import dataclasses
import fnmatch
from collections.abc import Sequence

from ci_onnx.contracts.errors import UsageError
from ci_onnx.contracts.target import Target
from ci_onnx.plan.document import Plan


def matches(target: Target, pattern: str) -> bool:
    """``pattern`` is a glob over ids (``minilm.*``, ``*-op17-*``); ``MODEL/GLOB`` reads as a glob
    over model names and one over the rest of the id (``encoder/*``, ``*/ort1.20.*``)."""
    model, slash, rest = pattern.partition("/")
    if slash:
        return fnmatch.fnmatchcase(target.model, model) and fnmatch.fnmatchcase(target.cell_id, rest)
    return fnmatch.fnmatchcase(target.id, pattern)


def select(plan: Plan, only: Sequence[str]) -> Plan:
    """Keep the targets whose id matches any of the ``only`` globs; a pattern matching none is an error."""
    if not only:
        return plan
    for pattern in only:
        if not any(matches(t, pattern) for t in plan.targets):
            ids = ", ".join(t.id for t in plan.targets[:6])
            raise UsageError(f"--only {pattern!r} matches no target; the plan has: {ids}…")
    kept = tuple(t for t in plan.targets if any(matches(t, p) for p in only))
    models = {t.model for t in kept}
    return dataclasses.replace(plan, targets=kept, models=tuple(m for m in plan.models if m.id in models))
