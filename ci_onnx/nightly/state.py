"""What a later night needs to remember, and where it is kept.

* While a family is broken, its tracking issue holds the state (``TrackState``), as JSON in a hidden
  HTML comment of the body: the issue is the record people read, it outlives any cache, and the next
  night finds it with the issue, so nothing else must survive for repeat failures and closing.
* While a family is green there is no issue, yet the next night needs the last release that passed,
  to bisect from when ``latest`` moves to a release that fails. That small memory (``Memory``) is a
  JSON file the workflow keeps between runs (actions/cache). Losing it costs only precision: the same
  night's older releases (``latest-2``) still give a release that passed, and the issue says when none
  is known.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

from ci_onnx.contracts import serde
from ci_onnx.contracts.errors import UsageError

SCHEMA_VERSION = 1
_STATE = re.compile(r"<!-- onnx-gate:nightly-state (\{.*?\}) -->", re.DOTALL)


@dataclasses.dataclass(frozen=True)
class TrackState:
    """A broken family's record, kept in its tracking issue."""

    schema_version: int
    family: str
    first_bad: str
    """The first failing release found (exact when ``untried`` is empty)."""
    last_good: str = ""
    """The newest release known to pass below ``first_bad``; empty when none is known."""
    untried: tuple[str, ...] = ()
    """Releases between ``last_good`` and ``first_bad`` not verified yet."""
    failing: str = ""
    """The release(s) that failed on the latest night."""
    since: str = ""
    """The night the family broke (ISO date)."""
    nights: int = 1
    """Nights failing in a row."""
    first_bad_verdict: str = "failed"
    """``error`` when the search could not judge ``first_bad`` (the break may be later)."""
    searched: dict[str, str] = dataclasses.field(default_factory=dict)
    """Release → verdict, for every release the search used (oldest first)."""
    verified: tuple[str, ...] = ()
    """The releases verified for the search (the rest came from a night's results)."""


def embed(state: TrackState) -> str:
    """The hidden comment that carries ``state`` in an issue body ("--" cannot end it early)."""
    text = json.dumps(serde.to_json(state), separators=(",", ":")).replace("--", "-\\u002d")
    return f"<!-- onnx-gate:nightly-state {text} -->"


def extract(body: str) -> TrackState | None:
    """The state an issue body carries; None when it carries none or one onnx-gate cannot read
    (edited by hand): the family is then treated as newly broken, and the body rewritten."""
    m = _STATE.search(body or "")
    if not m:
        return None
    try:
        return serde.from_json(TrackState, json.loads(m.group(1)))
    except (ValueError, TypeError, KeyError):
        return None


@dataclasses.dataclass(frozen=True)
class Memory:
    """The last release that passed, per family id (the state file)."""

    schema_version: int
    last_good: dict[str, str]


def read_memory(path: Path | None) -> Memory:
    """The remembered state; an absent file (first night, or an evicted cache) is an empty memory."""
    if path is None or not path.exists():
        return Memory(SCHEMA_VERSION, {})
    try:
        return serde.from_json(Memory, json.loads(path.read_text()))
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise UsageError(
            f"{path}: not a nightly state file written by onnx-gate ({exc}); delete it to start afresh"
        ) from None


def write_memory(path: Path, memory: Memory) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(serde.dumps(memory))
