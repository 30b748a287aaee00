"""Comparing the checks of one target seen by two runner kinds.

Only the python runner caches the optimized graph and times a fresh process; every other kind
declares both unmeasured, so the judge skips those checks with the reason. Everything else must
be equal: the same judge on the same bundle.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

PYTHON_ONLY = frozenset({"optimized-cache", "cold-start"})


def expected_elsewhere(python_checks: Iterable[tuple[str, Any]]) -> list[tuple[str, str]]:
    """The (name, status) list another runner kind should give, from the python runner's."""
    return [(name, "skipped" if name in PYTHON_ONLY else str(status)) for name, status in python_checks]


def pairs(checks: Iterable[Mapping[str, Any]]) -> list[tuple[str, str]]:
    return [(c["name"], str(c["status"])) for c in checks]
