"""Gather TargetResults from result directories and line them up with the plan.

Results arrive as downloaded artifacts (one folder per job, nested as the download left them) or
from a local run. A result file that cannot be read is a problem the report shows, not a crash; a
planned target with no result is *missing* (a cancelled or crashed job) and blocks the gate.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from ci_onnx.contracts.errors import GateError, UsageError
from ci_onnx.contracts.results import TargetResult, read_result
from ci_onnx.contracts.target import Status, Target
from ci_onnx.plan import Plan, sort_key

MAX_FILES = 100_000
"""A bound on the files walked, so a wrong --results (a home directory) ends with a message."""


@dataclasses.dataclass(frozen=True)
class Entry:
    """One row of the report: a target, and its result when one arrived."""

    target: Target
    outcome: Status
    """The result's status, or Status.MISSING when none arrived."""
    result: TargetResult | None
    reason: str = ""
    """Why it failed, errored, was skipped or is missing (one line)."""
    unchanged_since: str = ""
    """The base commit whose result this is: the target's model did not change since (not re-run)."""
    reuse: str = ""
    """Against a baseline, why its model was reused or re-run (``PlannedModel.reuse``)."""


@dataclasses.dataclass(frozen=True)
class Collection:
    entries: tuple[Entry, ...]
    problems: tuple[str, ...] = ()
    """Input files that could not be read, and duplicates; each blocks the gate."""
    config_path: str = ""


NOT_RESULTS = frozenset({"observation.json", "manifest.json", "plan.json", "baseline.json"})
"""JSON that artifacts carry beside results (a runner's observation, a bundle's manifest, the plan,
what a baseline says of itself)."""


def _classify(path: Path) -> str:
    """``result``, ``other`` (JSON that is not a result), or why the file cannot be read.

    A file that cannot be told apart from a truncated result counts as unreadable: a result that
    vanished must block the gate, not pass it."""
    try:
        data = json.loads(path.read_bytes())
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    except RecursionError:
        return "is nested too deeply to be a TargetResult"
    except ValueError as exc:
        return f"is not valid JSON (truncated or corrupted? {str(exc)[:120]})"
    if not isinstance(data, dict):
        return "other"
    if not data:  # what a job that died while writing its result can leave
        return "is an empty JSON object, not a TargetResult"
    if "target" in data or "status" in data or ("schema_version" in data and "targets" not in data):
        return "result"
    return "other"


def find_result_files(
    dirs: Sequence[Path], missing: list[str] | None = None, unreadable: list[str] | None = None
) -> list[Path]:
    """Every TargetResult JSON under ``dirs`` (other JSON, e.g. observations and plans, is ignored).

    A directory that does not exist is a usage error, unless ``missing`` collects it: with a plan, a
    run whose verify jobs all died uploads no results at all, and that must still be reported.
    JSON that cannot be read goes to ``unreadable`` (one line naming the file), else it is returned
    with the results so that reading it fails loudly."""
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
        root = d.resolve() if d.is_dir() else None
        for path in candidates:
            walked += 1
            if walked > MAX_FILES:
                raise UsageError(f"--results {d}: more than {MAX_FILES} JSON files; point it at the results")
            if path.name in NOT_RESULTS or path.is_dir():
                continue
            if root is not None and not _inside(path, root):
                if unreadable is not None:
                    unreadable.append(
                        f"{path}: a link that leads outside {d}; an artifact holds only its files"
                    )
                continue
            kind = _classify(path)
            if kind == "result":
                found.append(path)
            elif kind != "other":
                if unreadable is None:
                    found.append(path)
                else:
                    unreadable.append(f"{path}: {kind}; the result it held is lost, so the gate fails")
    return found


def _inside(path: Path, root: Path) -> bool:
    try:
        return path.resolve().is_relative_to(root)
    except (OSError, RuntimeError, ValueError):
        return False


def _entry(result: TargetResult, planned: Target | None) -> Entry:
    target = planned or result.target
    return Entry(target=target, outcome=result.status, result=result, reason=result.summary)


_SEVERITY = {
    Status.MISSING: 0,  # no result says it of itself, but one that did would count as the worst
    Status.ERROR: 0,
    Status.FAILED: 1,
    Status.SKIPPED: 2,
    Status.EXPECTED: 3,
    Status.PASSED: 4,
}


def _agree(a: TargetResult, b: TargetResult) -> bool:
    return a.status is b.status and (not a.bundle or not b.bundle or a.bundle == b.bundle)


def collect(
    dirs: Sequence[Path], plan: Plan | None = None, base: Mapping[str, TargetResult] | None = None
) -> Collection:
    """The results under ``dirs`` lined up with ``plan``; ``base``: the baseline's results, which
    stand for the targets of a model the plan marks unchanged since the base commit."""
    problems: list[str] = []
    by_id: dict[str, TargetResult] = {}
    where: dict[str, Path] = {}
    # with a plan, a directory no job uploaded to is a problem, unless no job was to run (every
    # model unchanged since the base, whose results stand)
    missing = (problems if plan.runnable else []) if plan is not None else None
    for path in find_result_files(dirs, missing, problems):
        try:
            result = read_result(path)
        except GateError as exc:
            problems.append(exc.message)
            continue
        tid = result.target.id
        seen = by_id.get(tid)
        if seen is None:
            by_id[tid] = result
            where[tid] = path
            continue
        if not _agree(seen, result):
            problems.append(
                f"{tid}: two results disagree ({seen.status.value} in {where[tid]}, "
                f"{result.status.value} in {path}"
                + (
                    f", bundles {seen.bundle[:12]} vs {result.bundle[:12]}"
                    if seen.bundle != result.bundle
                    else ""
                )
                + "); download one run's artifacts only"
            )
        worse = _SEVERITY.get(result.status, 0) < _SEVERITY.get(seen.status, 0)
        same = result.status is seen.status
        if worse or (same and result.started_at > seen.started_at):
            by_id[tid] = result  # the worse verdict shows, never simply the newer one
            where[tid] = path
    return merge(by_id, plan, problems, base or {})


def merge(
    by_id: dict[str, TargetResult],
    plan: Plan | None,
    problems: Sequence[str] = (),
    base: Mapping[str, TargetResult] | None = None,
) -> Collection:
    """Line results up with the plan: expected skips, missing targets, and results the plan lacks."""
    entries: list[Entry] = []
    if plan is None:
        entries = [_entry(r, None) for r in by_id.values()]
        return Collection(tuple(sorted(entries, key=_order)), tuple(problems))
    unchanged = {m.id: m.unchanged_since for m in plan.models if m.unchanged_since}
    for target in plan.targets:
        result = by_id.pop(target.id, None)
        since = unchanged.get(target.model, "")
        if since and not target.expected_skip:
            result = result or (base or {}).get(target.id)
            if result is None:
                why = f"no result arrived: its model is unchanged since {since[:7]}; no base result at hand"
                entries.append(Entry(target, Status.MISSING, None, why, since))
            else:
                entries.append(dataclasses.replace(_entry(result, target), unchanged_since=since))
            continue
        if target.expected_skip:
            reason = target.expected_skip
            if result is not None and result.status is Status.PASSED:
                reason += " (yet it ran and passed: the expected skip may be stale)"
            entries.append(Entry(target, Status.EXPECTED, result, reason))
        elif result is None:
            entries.append(
                Entry(
                    target,
                    Status.MISSING,
                    None,
                    f"no result arrived: the job was cancelled or crashed before writing "
                    f"results/{target.id}.json",
                )
            )
        else:
            entries.append(_entry(result, target))
    entries.extend(_entry(r, None) for r in by_id.values())  # results of targets the plan lacks
    reasons = {m.id: m.reuse for m in plan.models if m.reuse}
    entries = [dataclasses.replace(e, reuse=reasons.get(e.target.model, "")) for e in entries]
    return Collection(tuple(sorted(entries, key=_order)), tuple(problems), plan.config)


def _order(entry: Entry) -> tuple[object, ...]:
    return sort_key(entry.target)
