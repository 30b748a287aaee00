"""The plan as a file: its models and targets, what the CI jobs read (plan.json, versioned)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from ci_onnx.contracts import serde
from ci_onnx.contracts.errors import UsageError
from ci_onnx.contracts.gate_settings import GateSettings
from ci_onnx.contracts.target import Target
from ci_onnx.contracts.verify_options import VerifyOptions
from ci_onnx.plan.cijobs import CiSettings

SCHEMA_VERSION = 1


@dataclasses.dataclass(frozen=True)
class PlannedModel:
    """One model of the plan: its verify settings, and what says whether it changed."""

    id: str
    """Its name in ids (``Target.model``); "" for the single ``model`` form."""
    name: str
    verify: VerifyOptions = dataclasses.field(default_factory=VerifyOptions)
    export_key: str = ""
    """The export cache keys of its bundles, in one digest (ci_onnx/orchestration/reuse.py); "" where they
    cannot be told (a factory onnx-gate cannot see into)."""
    fingerprint: str = ""
    """Its export key, its targets (resolved releases, expected skips) and verify settings, in one
    digest: equal on the base commit, its results there are its results here."""
    unchanged_since: str = ""
    """The base commit whose results stand for this model's: not exported, not verified again."""
    reuse: str = ""
    """Against a baseline, why the model is unchanged ("nothing its export read changed: …") or
    runs again ("re-run: src/mylib/layers.py changed"); "" without one."""


@dataclasses.dataclass(frozen=True)
class Plan:
    schema_version: int
    config: str
    model: str
    targets: tuple[Target, ...]
    verify: VerifyOptions = dataclasses.field(default_factory=VerifyOptions)
    """The config's verify settings and budgets: they travel with the plan, so a verify job in CI
    judges by the same settings as a local run without checking out the repository (the first
    model's; each model's are in ``models``, read through :meth:`options_for`)."""
    ci: CiSettings = dataclasses.field(default_factory=CiSettings)
    """How the workflows group its cells into verify jobs (ci_onnx/plan/cijobs.py)."""
    gate: GateSettings = dataclasses.field(default_factory=GateSettings)
    """The config's gate mode, expected-failure ledger and thresholds, for the report job likewise."""
    models: tuple[PlannedModel, ...] = ()
    """Every model, in the order the config declares them (one, with id "", for ``model``)."""

    @property
    def runnable(self) -> tuple[Target, ...]:
        """The targets to export and verify: not expected skips, not of a model unchanged since
        the base (whose results come from there)."""
        reused = {m.id for m in self.models if m.unchanged_since}
        return tuple(t for t in self.targets if not t.expected_skip and t.model not in reused)

    def options_for(self, target: Target) -> VerifyOptions:
        """The verify settings of ``target``'s model."""
        return next((m.verify for m in self.models if m.id == target.model), self.verify)

    def planned_model(self, model: str) -> PlannedModel | None:
        return next((m for m in self.models if m.id == model), None)

    def bundle_keys(self) -> list[str]:
        return sorted({t.bundle_key for t in self.runnable})

    def get(self, target_id: str) -> Target:
        for t in self.targets:
            if t.id == target_id:
                return t
        raise UsageError(f"target {target_id!r} is not in the plan; `onnx-gate plan` lists the ids")


def to_json(plan: Plan) -> str:
    return serde.dumps(plan)


def read_plan(path: Path) -> Plan:
    from ci_onnx.contracts.results import check_schema_version

    try:
        data = json.loads(path.read_bytes())
        check_schema_version(data, SCHEMA_VERSION, path, "plan")
        return serde.from_json(Plan, data)
    except (OSError, ValueError, TypeError, KeyError, RecursionError) as exc:
        raise UsageError(f"{path}: not a plan written by `onnx-gate plan --format json` ({exc})") from None
