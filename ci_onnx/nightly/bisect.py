"""Name the first failing release between a release that passed and one that failed.

The releases between them are searched by halves. A release is good only when it *passed*: a failure,
an error (an install that broke, a crash) or a skip counts as not good, so a flaky release can move the
answer earlier, never hide a break; every verdict used is listed, so a reader can tell.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from ci_onnx.contracts.errors import GateError
from ci_onnx.contracts.target import Status
from ci_onnx.matrix import version_key


class VerifyAt(Protocol):
    """Verify the family's bundle on one release of its runtime; the verdict only."""

    def __call__(self, version: str) -> Status: ...


@dataclasses.dataclass(frozen=True)
class Bisection:
    good: str
    """The newest release known to pass below ``first_bad``."""
    first_bad: str
    """The oldest release known not to pass; the first failing release when ``untried`` is empty."""
    verdicts: tuple[tuple[str, Status], ...]
    """Every release whose verdict the search used, oldest first (tonight's results and verifications)."""
    verified: tuple[str, ...] = ()
    """The releases verified for this search, in the order they were tried."""
    untried: tuple[str, ...] = ()
    """Releases between ``good`` and ``first_bad`` whose verdict is unknown (no verifier, or it failed)."""
    note: str = ""

    @property
    def exact(self) -> bool:
        return not self.untried


def bisect(
    good: str,
    bad: str,
    releases: Sequence[str],
    *,
    known: Mapping[str, Status] | None = None,
    verify_at: VerifyAt | None = None,
    log: Callable[[str], None] = lambda _m: None,
) -> Bisection:
    """The first release after ``good`` that does not pass, up to ``bad`` (known not to pass).

    ``releases``: the releases after ``good`` up to ``bad`` (``resolve.releases_between``), any order.
    ``known``: verdicts already at hand (the same night's results of other releases); they cost nothing.
    Each release not known is verified at most once; with ``n`` releases that is at most ⌈log2 n⌉.
    """
    lo_key, hi_key = version_key(good), version_key(bad)
    window = sorted({v for v in releases if lo_key < version_key(v) < hi_key}, key=version_key)
    window.append(bad)
    verdicts = {v: s for v, s in (known or {}).items() if v in window}
    if verdicts.get(bad, Status.PASSED) is Status.PASSED:
        verdicts[bad] = Status.FAILED
    verified: list[str] = []
    lo, hi = _narrow(window, verdicts)
    note = ""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        version = window[mid]
        if version not in verdicts:
            if verify_at is None:
                break
            verdicts[version] = _verify(verify_at, version, log)
            verified.append(version)
        if verdicts[version] is Status.PASSED:
            lo = mid
        else:
            hi = mid
    untried = tuple(v for v in window[lo + 1 : hi] if v not in verdicts) if hi - lo > 1 else ()
    if untried and verify_at is None:
        note = "no verifier for other releases in this run"
    first_good = good if lo < 0 else window[lo]
    used = sorted(((v, s) for v, s in verdicts.items() if v in window), key=lambda vs: version_key(vs[0]))
    return Bisection(first_good, window[hi], tuple(used), tuple(verified), untried, note)


def _narrow(window: Sequence[str], verdicts: Mapping[str, Status]) -> tuple[int, int]:
    """The tightest (last good, first not-good) index pair the known verdicts allow; -1 is ``good``."""
    hi = next(i for i, v in enumerate(window) if v in verdicts and verdicts[v] is not Status.PASSED)
    lo = max((i for i in range(hi) if verdicts.get(window[i]) is Status.PASSED), default=-1)
    return lo, hi


def _verify(verify_at: VerifyAt, version: str, log: Callable[[str], None]) -> Status:
    try:
        status = verify_at(version)
    except GateError as exc:
        log(f"bisect: verifying {version} failed: {exc.message}")
        return Status.ERROR
    log(f"bisect: {version} {status.value}")
    return status
