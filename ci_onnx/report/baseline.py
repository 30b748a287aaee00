"""A baseline: the results of the base commit for the same plan, and where they came from.

Locally it is the ``--out`` of an earlier run (``--baseline DIR``) or a run of the base commit in a
temporary worktree (``--baseline-ref REF``); in CI, the ``onnx-gate-baseline`` artifact of the run
of the pull request's base commit (ci_onnx/github/artifacts.py). Every form is a directory holding
``results/`` (searched as ``report --results`` searches), ``plan.json`` and ``baseline.json``
(the commit, and the sha256 of each bundle's model); bundles/ beside them, where present, let the
verify stage time base and head side by side.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from ci_onnx.contracts import serde
from ci_onnx.contracts.errors import UsageError
from ci_onnx.contracts.results import TargetResult
from ci_onnx.export import record
from ci_onnx.export.record import Record

if TYPE_CHECKING:
    from ci_onnx.plan import Plan
    from ci_onnx.report.collect import Collection

META = "baseline.json"
SCHEMA_VERSION = 1


@dataclasses.dataclass(frozen=True)
class Meta:
    """``baseline.json``: what a run's ``--out`` (and the baseline artifact) says about itself."""

    schema_version: int
    commit: str = ""
    """The commit the results are of ("" when the run was not in a git checkout)."""
    bundles: dict[str, str] = dataclasses.field(default_factory=dict)
    """Bundle key → sha256 of its model file: which bundles a later run can compare or reuse."""
    onnx_gate: str = ""
    """The onnx-gate that wrote it: a reader that cannot read it says which wrote it."""


@dataclasses.dataclass(frozen=True)
class Baseline:
    commit: str
    source: str
    """Where it came from, said in the report: ``--baseline onnx-gate-base``, ``the artifact of run
    4711 on main``, ``--baseline-ref main (a temporary worktree)``."""
    results: dict[str, TargetResult]
    planned: tuple[str, ...] = ()
    """The ids the base plan held, so that a base target without a result counts as missing there."""
    skipped: tuple[str, ...] = ()
    """The base plan's expected skips (no result is due from them)."""
    bundles: Path | None = None
    """The base bundles on disk, where at hand (a local run): they can be timed beside the head's."""
    note: str = ""
    """What the reader should know about the choice ("the newest successful run on main, not the
    pull request's base commit"), or ""."""
    problems: tuple[str, ...] = ()
    """Base result files that could not be read (shown; they do not block the head)."""
    fingerprints: dict[str, str] = dataclasses.field(default_factory=dict)
    """Model id → its fingerprint in the base plan (ci_onnx/orchestration/reuse.py): which models are
    unchanged."""
    plan: Plan | None = dataclasses.field(default=None, repr=False, compare=False)
    """The base's plan: its policy judges the head (ci_onnx/report/policy.py); None where the
    baseline holds none."""
    records: dict[str, tuple[Record, ...]] = dataclasses.field(default_factory=dict)
    """Model id → what its base exports read (ci_onnx/export/record.py), from the base results'
    export findings: a model is unchanged only while every one of them still holds."""

    @property
    def short(self) -> str:
        return self.commit[:7] if self.commit else "(unknown commit)"


def bundles_of(collection: Collection) -> dict[str, str]:
    """Bundle key → the sha256 of its model, as the results recorded it."""
    return {
        e.target.bundle_key: e.result.bundle
        for e in collection.entries
        if e.result is not None and e.result.bundle
    }


def write_meta(out: Path, commit: str, bundles: dict[str, str]) -> Path:
    path = out / META
    from ci_onnx import __version__

    path.write_text(serde.dumps(Meta(SCHEMA_VERSION, commit, dict(sorted(bundles.items())), __version__)))
    return path


def read_meta(directory: Path) -> Meta:
    path = directory / META
    if not path.is_file():
        return Meta(SCHEMA_VERSION)
    from ci_onnx.contracts.results import check_schema_version

    try:
        data = json.loads(path.read_bytes())
        check_schema_version(data, SCHEMA_VERSION, path, "baseline description")
        return serde.from_json(Meta, data)
    except (OSError, ValueError, TypeError, KeyError, RecursionError) as exc:
        raise UsageError(f"{path}: not a baseline description written by onnx-gate ({exc})") from None


def load(directory: Path, *, source: str = "", commit: str = "", note: str = "") -> Baseline:
    """The baseline in ``directory``: an earlier ``--out`` (its ``results/``), or an unpacked
    baseline artifact (results anywhere below it).

    A directory without results is a usage error naming it; a result file that cannot be read is a
    problem of the baseline, shown in the report, never a reason to fail the head."""
    from ci_onnx.plan import read_plan
    from ci_onnx.report.collect import collect, find_result_files

    if not directory.is_dir():
        raise UsageError(f"--baseline {directory}: no such directory; give the --out of an earlier run")
    results_dir = directory / "results" if (directory / "results").is_dir() else directory
    if not find_result_files([results_dir]):
        raise UsageError(
            f"--baseline {directory}: holds no results; give the --out of an earlier `onnx-gate run`"
        )
    plan_file = directory / "plan.json"
    plan = read_plan(plan_file) if plan_file.is_file() else None
    collection = collect([results_dir], None)
    meta = read_meta(directory)
    bundles = directory / "bundles"
    return Baseline(
        commit=commit or meta.commit,
        source=source or f"--baseline {directory}",
        results={e.target.id: e.result for e in collection.entries if e.result is not None},
        planned=tuple(t.id for t in plan.targets) if plan else (),
        skipped=tuple(t.id for t in plan.targets if t.expected_skip) if plan else (),
        bundles=bundles if bundles.is_dir() else None,
        note=note,
        problems=collection.problems,
        fingerprints={m.id: m.fingerprint for m in plan.models if m.fingerprint} if plan else {},
        plan=plan,
        records=records_of(e.result for e in collection.entries if e.result is not None),
    )


def records_of(results: Iterable[TargetResult]) -> dict[str, tuple[Record, ...]]:
    """Model id → the distinct records of what its exports read, as its results carry them; none
    for a model one of whose results carries no record (an export that crashed, an older
    onnx-gate): what that export read cannot be checked."""
    found: dict[str, list[Record]] = {}
    unknown: set[str] = set()
    for r in results:
        read = record.of_findings(r.checks)
        mine = found.setdefault(r.target.model, [])
        if read is None:
            unknown.add(r.target.model)
        elif read not in mine:
            mine.append(read)
    return {model: () if model in unknown else tuple(records) for model, records in found.items()}
