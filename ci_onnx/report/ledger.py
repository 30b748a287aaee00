"""The expected-failure ledger: which failures are known, explained and dated (``expected_failures``).

A failing check of a target is *covered* by the first entry whose ``select`` glob matches the target
id and whose ``check`` glob matches the check's name. A target that is *missing* or ended in an
*error* is covered only by an entry that names it and that check exactly, never by a glob: a ledger
written for known numeric failures must not turn a died job or a crashed runtime into a pass.
A target whose every failing check is covered
by an entry still in date is an expected failure: shown with its reason, not blocking. Past its
``until`` an entry covers nothing: the failure blocks and says the entry expired. An entry that
covers no failure of the run is stale, and the report says to remove it.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import re
from collections.abc import Iterable, Sequence

from ci_onnx.contracts.gate_settings import ExpectedFailure


@dataclasses.dataclass(frozen=True)
class Cover:
    """What the ledger says about one target's failing checks."""

    entries: tuple[ExpectedFailure, ...] = ()
    """The entries that cover its failing checks (in date or not), each once, in ledger order."""
    uncovered: tuple[str, ...] = ()
    """Failing checks no entry matches."""
    expired: tuple[ExpectedFailure, ...] = ()

    @property
    def expected(self) -> bool:
        """Every failing check is covered by an entry in date."""
        return bool(self.entries) and not self.uncovered and not self.expired


@functools.cache
def _glob(pattern: str) -> re.Pattern[str]:
    """``*`` and ``?`` are wildcards; everything else is literal, brackets included: check names
    hold them (``parity[*]`` is every output's parity check, not a character class)."""
    return re.compile("".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern))


def matches(pattern: str, text: str) -> bool:
    return _glob(pattern).fullmatch(text) is not None


def _matches(entry: ExpectedFailure, target_id: str, check: str, exact: bool) -> bool:
    if exact:
        return entry.select == target_id and entry.check == check
    return matches(entry.select, target_id) and matches(entry.check, check)


def cover(
    ledger: Sequence[ExpectedFailure],
    target_id: str,
    failing: Iterable[str],
    today: datetime.date,
    *,
    exact: bool = False,
) -> Cover:
    """What ``ledger`` says of ``target_id``'s failing checks; ``exact``: only entries that name the
    target and the check as they are (a missing or errored target)."""
    entries: list[ExpectedFailure] = []
    uncovered: list[str] = []
    for check in failing:
        entry = next((e for e in ledger if _matches(e, target_id, check, exact)), None)
        if entry is None:
            uncovered.append(check)
        elif entry not in entries:
            entries.append(entry)
    return Cover(tuple(entries), tuple(uncovered), tuple(e for e in entries if e.expired(today)))


def describe(entry: ExpectedFailure) -> str:
    """``expected: <reason> (until 2026-12-31, <link>)``: what the report says beside the failure."""
    where = f", {entry.link}" if entry.link else ""
    return f"expected: {entry.reason} (until {entry.until}{where})"


def expiry(entry: ExpectedFailure) -> str:
    return (
        f"{entry.key} ({entry.reason}) expired on {entry.until}: fix the failure, or renew `until` "
        f"in onnx-gate.yml"
    )


def stale(ledger: Sequence[ExpectedFailure], used: Iterable[ExpectedFailure]) -> tuple[str, ...]:
    """One line per entry that covered no failure of this run."""
    seen = set(used)
    return tuple(
        f"{e.key} (select {e.select!r}, check {e.check!r}) matches no failure of this run: remove it"
        for e in ledger
        if e not in seen
    )
