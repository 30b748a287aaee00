"""One night, decided: for each target family, open, comment on or close its tracking issue.

Pure apart from the injected release listing and verifier: GitHub is read before (the open issues)
and written after (``ci_onnx.nightly.publish``), so the decisions are tested without a server.

    broken, no issue    → open one (title, rows, the first failing release, the reproduce command)
    broken, issue open  → a comment, and the body brought up to date
    green,  issue open  → a comment, and the issue closed
    green,  no issue    → nothing; the release that passed is remembered for the next bisect
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Mapping, Sequence

from ci_onnx.contracts.errors import EnvironmentProblem
from ci_onnx.contracts.target import Status
from ci_onnx.matrix import version_key
from ci_onnx.nightly import text
from ci_onnx.nightly.bisect import VerifyAt, bisect
from ci_onnx.nightly.families import FamilyNight, newest_passing
from ci_onnx.nightly.state import SCHEMA_VERSION, Memory, TrackState, extract

Log = Callable[[str], None]
Releases = Callable[[str, str, str], list[str]]
"""(good, bad, package) → the releases after good up to bad: ``resolve.releases_between``."""
VerifierFor = Callable[[FamilyNight], VerifyAt | None]


class Kind(enum.StrEnum):
    OPEN = "open"
    COMMENT = "comment"
    CLOSE = "close"


@dataclasses.dataclass(frozen=True)
class OpenIssue:
    number: int
    url: str
    body: str


@dataclasses.dataclass(frozen=True)
class Action:
    kind: Kind
    family: str
    issue: OpenIssue | None
    title: str = ""
    body: str = ""
    """The whole issue body to write (open, comment); empty when closing."""
    comment: str = ""
    state: TrackState | None = None


@dataclasses.dataclass(frozen=True)
class Decided:
    actions: tuple[Action, ...]
    memory: Memory
    broken: tuple[str, ...]
    """The ids of tonight's broken families."""


def decide(
    families: Sequence[FamilyNight],
    issues: Mapping[str, OpenIssue],
    memory: Memory,
    night: text.Night,
    *,
    releases: Releases,
    verifier_for: VerifierFor = lambda _f: None,
    log: Log = lambda _m: None,
) -> Decided:
    """``issues``: the open tracking issues by family id (``open_tracking_issues``)."""
    actions: list[Action] = []
    remembered = dict(memory.last_good)
    pooled: dict[str, dict[str, Status]] = {}
    for fam in families:
        pooled.setdefault(fam.key.cell, {}).update(fam.verdicts())
    for fam in families:
        fid = fam.key.id
        issue = issues.get(fid)
        if fam.broken:
            previous = extract(issue.body) if issue else None
            known = pooled[fam.key.cell]
            state = _track(fam, known, previous, remembered.get(fid, ""), night, releases, verifier_for, log)
            v = text.issue_view(fam, state, night)
            if issue is None:
                actions.append(Action(Kind.OPEN, fid, None, text.title(v), text.body(v), state=state))
            else:
                actions.append(
                    Action(
                        Kind.COMMENT, fid, issue, text.title(v), text.body(v), text.repeat_comment(v), state
                    )
                )
        elif issue is not None:
            actions.append(Action(Kind.CLOSE, fid, issue, comment=text.close_comment(fam, night)))
        good = fam.newest_passing()
        if good:
            remembered[fid] = good
    return Decided(
        tuple(actions),
        Memory(SCHEMA_VERSION, dict(sorted(remembered.items()))),
        tuple(f.key.id for f in families if f.broken),
    )


def _track(
    fam: FamilyNight,
    known: dict[str, Status],
    previous: TrackState | None,
    remembered: str,
    night: text.Night,
    releases: Releases,
    verifier_for: VerifierFor,
    log: Log,
) -> TrackState:
    """The family's record after tonight, bisecting when the first failing release is not known yet.

    ``known``: tonight's verdicts for the family's cell, under any spec (a pinned 1.31.1 that passed
    is a release that passed for ``latest`` too).
    """
    bad = fam.failing[0].target.runtime
    failing = ", ".join(e.target.runtime for e in fam.failing)
    nights = previous.nights + 1 if previous else 1
    since = previous.since if previous else night.date
    verifier = verifier_for(fam)
    if (
        previous is not None
        and previous.first_bad
        and version_key(previous.first_bad) <= version_key(bad)
        and (not previous.untried or verifier is None)
    ):
        kept = dataclasses.replace(previous, failing=failing, nights=nights)
        return kept
    if previous is not None and previous.first_bad and version_key(previous.first_bad) < version_key(bad):
        bad = previous.first_bad  # failed on an earlier night: search below it
    good = _last_good(known, bad, previous, remembered)
    if not good:
        return TrackState(SCHEMA_VERSION, fam.key.id, bad, "", (), failing, since, nights)
    try:
        between = releases(good, bad, fam.key.package)
    except EnvironmentProblem as exc:
        log(f"{fam.key.id}: {exc.message}; searching this night's releases only")
        between = [v for v in known if version_key(good) < version_key(v) <= version_key(bad)]
    found = bisect(good, bad, between, known=known, verify_at=verifier, log=log)
    verdict = dict(found.verdicts).get(found.first_bad, Status.FAILED)
    return TrackState(
        SCHEMA_VERSION,
        fam.key.id,
        found.first_bad,
        found.good,
        found.untried,
        failing,
        since,
        nights,
        verdict.value,
        {v: status.value for v, status in found.verdicts},
        found.verified,
    )


def _last_good(known: dict[str, Status], bad: str, previous: TrackState | None, remembered: str) -> str:
    """A release below ``bad`` that passed: tonight's, else the issue's record, else the state file's."""
    for candidate in (
        newest_passing(known, bad),
        previous.last_good if previous else "",
        remembered,
    ):
        if candidate and version_key(candidate) < version_key(bad):
            return candidate
    return ""
