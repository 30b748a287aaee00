"""What one tracking issue follows: a target family, the same cell whatever release the spec named.

A nightly plan resolves ``latest`` to a new release now and then; an issue keyed by the resolved
version would open again with every release. The family is the target without its version (every other
part of its id: runner, API level, provider, opset, exporter, precision, session options, as
:attr:`Target.family` derives it) and the runtime *spec* (``latest``, ``latest-2``, ``nightly``,
``1.24.*``; an exact pin is its own spec). With ``latest-N`` a family holds N releases in one night.
"""

from __future__ import annotations

import dataclasses

from ci_onnx import matrix
from ci_onnx.contracts.target import DEFAULT_RUNNER, Status, Target
from ci_onnx.matrix import version_key
from ci_onnx.report.collect import Collection, Entry
from ci_onnx.report.gate import Gate


@dataclasses.dataclass(frozen=True, order=True)
class FamilyKey:
    """A target family: :attr:`Target.family` (every part of the id but the release) and the spec."""

    cell: str
    """The family without its spec (``node-cpu-op17-dynamo``): releases verified under other specs
    say as much about it."""
    spec: str
    runner: str = dataclasses.field(default=DEFAULT_RUNNER, compare=False)
    provider: str = dataclasses.field(default="", compare=False)

    @classmethod
    def of(cls, target: Target) -> FamilyKey:
        return cls(target.family, target.runtime_spec or target.runtime, target.runner, target.provider)

    @property
    def id(self) -> str:
        """``cpu-op17-dynamo@latest``: readable, and stable from one release to the next."""
        return f"{self.cell}@{self.spec}"

    @property
    def marker(self) -> str:
        """The hidden line that finds this family's tracking issue again."""
        return f"<!-- onnx-gate:nightly:{self.id} -->"

    @property
    def package(self) -> str:
        """The package the family's releases come from, as the Resolver is asked for it."""
        runner = matrix.runners().get(self.runner)
        if runner is None or self.provider not in matrix.providers():
            return "onnxruntime"
        return runner.index_name(self.provider)


@dataclasses.dataclass(frozen=True)
class FamilyNight:
    """One night's entries of a family, oldest release first (expected skips left out)."""

    key: FamilyKey
    entries: tuple[Entry, ...]
    blocking: frozenset[str] = frozenset()
    """The ids the gate says block (ci_onnx.report.gate): an expected failure breaks no family."""

    @property
    def broken(self) -> bool:
        return bool(self.failing)

    @property
    def failing(self) -> tuple[Entry, ...]:
        return tuple(e for e in self.entries if e.target.id in self.blocking)

    @property
    def newest(self) -> Entry:
        return self.entries[-1]

    def verdicts(self) -> dict[str, Status]:
        """Release → verdict; a missing result counts as an error (not good)."""
        return {e.target.runtime: _status(e.outcome) for e in self.entries}

    def newest_passing(self) -> str:
        passed = [e.target.runtime for e in self.entries if e.outcome is Status.PASSED]
        return passed[-1] if passed else ""


def newest_passing(verdicts: dict[str, Status], below: str) -> str:
    """The newest release below ``below`` that passed, or ''."""
    passed = [v for v, s in verdicts.items() if s is Status.PASSED and version_key(v) < version_key(below)]
    return max(passed, key=version_key, default="")


def _status(outcome: Status) -> Status:
    return Status.ERROR if outcome is Status.MISSING else outcome


def group(collection: Collection, decided: Gate) -> list[FamilyNight]:
    """The families of a night, in a stable order; expected skips and plain skips are not judged.
    A family is broken where the gate's decision (absolute, with the ledger) blocks on one of its
    targets."""
    blocking = {c.target.id for c in decided.blocking}
    by_key: dict[FamilyKey, list[Entry]] = {}
    for e in collection.entries:
        if e.outcome in (Status.EXPECTED, Status.SKIPPED):
            continue
        by_key.setdefault(FamilyKey.of(e.target), []).append(e)
    return [
        FamilyNight(
            key,
            tuple(sorted(entries, key=lambda e: version_key(e.target.runtime))),
            frozenset(e.target.id for e in entries if e.target.id in blocking),
        )
        for key, entries in sorted(by_key.items())
    ]
