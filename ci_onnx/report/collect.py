"""Gather TargetResults from result directories and line them up with the plan.

Results arrive as downloaded artifacts (one folder per job, nested as the download left them) or
from a local run. A result file that cannot be read is a problem the report shows, not a crash; a
planned target with no result is *missing* (a cancelled or crashed job) and blocks the gate.
"""

from __future__ import annotations

import dataclasses
import enum
import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from ci_onnx.errors import GateError, UsageError
from ci_onnx.plan import Plan, sort_key
from ci_onnx.results import TargetResult, read_result
from ci_onnx.target import Status, Target

MAX_FILES = 100_000
"""A bound on the files walked, so a wrong --results (a home directory) ends with a message."""


class Outcome(enum.StrEnum):
    """How the report counts a target: the result's status, plus *missing*."""

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    MISSING = "missing"
    EXPECTED = "expected"
    SKIPPED = "skipped"

    @property
    def blocks(self) -> bool:
        return self in (Outcome.FAILED, Outcome.ERROR, Outcome.MISSING)


@dataclasses.dataclass(frozen=True)
class Entry:
    """One row of the report: a target, and its result when one arrived."""

    target: Target
    outcome: Outcome
    result: TargetResult | None
    reason: str = ""
    """Why it failed, errored, was skipped or is missing (one line)."""


@dataclasses.dataclass(frozen=True)
class Collection:
    entries: tuple[Entry, ...]
    problems: tuple[str, ...] = ()
    """Input files that could not be read, and duplicates; each blocks the gate."""
    config_path: str = ""


def _looks_like_result(path: Path) -> bool:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and {"schema_version", "target", "status"} <= data.keys()


def find_result_files(dirs: Sequence[Path], missing: list[str] | None = None) -> list[Path]:
    """Every TargetResult JSON under ``dirs`` (other JSON, e.g. observations and plans, is ignored).

    A directory that does not exist is a usage error, unless ``missing`` collects it: with a plan, a
    run whose verify jobs all died uploads no results at all, and that must still be reported."""
    found: list[Path] = []
    walked = 0
    for d in dirs:
        if d.is_file():
            candidates: Iterable[Path] = [d]
        elif d.is_dir():
            candidates = sorted(d.rglob("*.json"))
        elif missing is not None:
            missing.append(f"--results {d}: no such file or directory (no job uploaded results?)")
            continue
        else:
            raise UsageError(f"--results {d}: no such file or directory")
        for path in candidates:
            walked += 1
            if walked > MAX_FILES:
                raise UsageError(f"--results {d}: more than {MAX_FILES} JSON files; point it at the results")
            if path.name != "observation.json" and _looks_like_result(path):
                found.append(path)
    return found


def _outcome(status: Status) -> Outcome:
    return Outcome(status.value)


def _entry(result: TargetResult, planned: Target | None) -> Entry:
    target = planned or result.target
    return Entry(target=target, outcome=_outcome(result.status), result=result, reason=result.summary)


def collect(dirs: Sequence[Path], plan: Plan | None = None) -> Collection:
    problems: list[str] = []
    by_id: dict[str, TargetResult] = {}
    for path in find_result_files(dirs, problems if plan is not None else None):
        try:
            result = read_result(path)
        except GateError as exc:
            problems.append(exc.message)
            continue
        seen = by_id.get(result.target.id)
        if seen is not None:
            if seen.bundle and result.bundle and seen.bundle != result.bundle:
                problems.append(
                    f"{path}: a second result for {result.target.id} from a different bundle "
                    f"({result.bundle[:12]} vs {seen.bundle[:12]}); download one run's artifacts only"
                )
            if result.started_at <= seen.started_at:
                continue
        by_id[result.target.id] = result
    return merge(by_id, plan, problems)


def merge(by_id: dict[str, TargetResult], plan: Plan | None, problems: Sequence[str] = ()) -> Collection:
    """Line results up with the plan: expected skips, missing targets, and results the plan lacks."""
    entries: list[Entry] = []
    if plan is None:
        entries = [_entry(r, None) for r in by_id.values()]
        return Collection(tuple(sorted(entries, key=_order)), tuple(problems))
    for target in plan.targets:
        result = by_id.pop(target.id, None)
        if target.expected_skip:
            reason = target.expected_skip
            if result is not None and result.status is Status.PASSED:
                reason += " (yet it ran and passed: the expected skip may be stale)"
            entries.append(Entry(target, Outcome.EXPECTED, result, reason))
        elif result is None:
            entries.append(
                Entry(
                    target,
                    Outcome.MISSING,
                    None,
                    f"no result arrived: the job was cancelled or crashed before writing "
                    f"results/{target.id}.json",
                )
            )
        else:
            entries.append(_entry(result, target))
    entries.extend(_entry(r, None) for r in by_id.values())  # results of targets the plan lacks
    return Collection(tuple(sorted(entries, key=_order)), tuple(problems), plan.config)


def _order(entry: Entry) -> tuple[object, ...]:
    return sort_key(entry.target)
