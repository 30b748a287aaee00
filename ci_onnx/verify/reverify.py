"""Verify a fork's bundles again, on the trusted side, without a token.

A pull request from a fork runs its own code in its own run; what that run uploads (plan, results,
bundles) is data the fork wrote. Its result files are claims: a fabricated "passed" must not turn the
required check green. The bundles are data too (an ONNX file, inputs, the references its export
computed), and observing one runs no code of the fork's: this module decides which of the fork's
cells the trusted workflow verifies again, from the target ids alone, so that the environment a cell
runs in is made from onnx-gate's own matrix data, never from anything else the fork's plan says.

``select`` is pure; `onnx-gate reverify` (ci_onnx/commands/reverify.py) verifies the cells it
selects and writes the record; `onnx-gate report --reverified DIR` judges those results in place of
the fork's, and what it could not verify by the base's ``gate.fork_results``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ci_onnx import matrix
from ci_onnx.contracts.errors import GateError, UsageError
from ci_onnx.contracts.target import Target

RECORD = "reverified.json"
"""What `onnx-gate reverify` writes beside its results: which cells it verified and why not the rest."""
SCHEMA = 1


@dataclasses.dataclass(frozen=True)
class Record:
    """Which of the fork's cells the trusted job verified, and why it did not verify the others."""

    reverified: tuple[str, ...] = ()
    """The ids verified again from the fork's bundles: their results replace the fork's."""
    not_reverified: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """id → why it was not (its kind needs a machine or a setup this job does not have)."""
    expected_skips: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """id → the skip onnx-gate's own matrix data gives it (a fork's plan cannot add one)."""
    lost: str = ""
    """Why there is no record ("" where there is one): every cell is then the fork's own claim."""

    def to_json(self) -> str:
        return json.dumps(
            {
                "schema": SCHEMA,
                "reverified": list(self.reverified),
                "not_reverified": dict(self.not_reverified),
                "expected_skips": dict(self.expected_skips),
            },
            indent=2,
            sort_keys=True,
        )


def why_not(target: Target) -> str:
    """Why the trusted job cannot verify ``target`` itself ("" where it can): it runs the kinds that
    install from PyPI into an environment of its own (no device, no browser set-up of the fork's) and
    the providers the container action serves."""
    kind = matrix.runners().get(target.runner)
    if kind is None:
        return f"runner kind {target.runner!r} is not one onnx-gate knows"
    if not kind.can.interpreter:
        return f"the {target.runner} runner's cells need a set-up of their own, not re-run by the trusted job"
    provider = matrix.providers().get(target.provider)
    if provider is None:
        return f"provider {target.provider!r} is not one onnx-gate knows"
    if not provider.container:
        return f"the {target.provider} provider needs a runner labelled {', '.join(provider.runs_on)}"
    return ""


def _skip(target: Target) -> str:
    """The expected skip onnx-gate's matrix data gives ``target`` (as the plan gives it)."""
    from ci_onnx import plan
    from ci_onnx.runners import session

    bare = dataclasses.replace(
        target, expected_skip=session.cannot_apply(target.runner, target.session_options)
    )
    return plan.with_skip_reason(bare).expected_skip


def select(planned: tuple[Target, ...]) -> tuple[tuple[Target, ...], Record]:
    """The fork's planned cells to verify again (rebuilt from their ids) and the record of the rest.

    A planned target is used only through its id (``Target.id`` spells every field that chooses an
    environment, so nothing else of the fork's plan reaches one). An expected skip is the one
    onnx-gate's matrix data gives, never the one the fork's plan claims."""
    chosen: list[Target] = []
    not_reverified: dict[str, str] = {}
    skips: dict[str, str] = {}
    for claimed in planned:
        try:
            target = Target.from_id(claimed.id)
        except UsageError as exc:
            not_reverified[claimed.id] = f"its id does not parse ({exc.message})"
            continue
        try:
            skip = _skip(target)
        except (GateError, KeyError, ValueError) as exc:
            not_reverified[claimed.id] = f"onnx-gate's matrix does not know it ({exc})"
            continue
        if skip:
            skips[target.id] = skip
            continue
        why = why_not(target)
        if why:
            not_reverified[target.id] = why
        else:
            chosen.append(target)
    return tuple(chosen), Record(tuple(t.id for t in chosen), not_reverified, skips)


def read(directory: Path) -> Record:
    """The record `onnx-gate reverify` wrote in ``directory``. Where it wrote none (its job failed or
    never ran), nothing was verified again, and the record says so: the report still judges, and
    posts its check. A record that is there but unreadable is a usage error naming it."""
    path = directory / RECORD
    if not path.exists():
        return Record(lost=f"the re-verification wrote no {RECORD} (its job failed or did not run)")
    try:
        data: Any = json.loads(path.read_text())
    except OSError as exc:
        raise UsageError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise UsageError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise UsageError(f"{path}: not a record of schema {SCHEMA}; write it with this onnx-gate's reverify")
    try:
        return Record(
            tuple(str(i) for i in data["reverified"]),
            {str(k): str(v) for k, v in data["not_reverified"].items()},
            {str(k): str(v) for k, v in data["expected_skips"].items()},
        )
    except (KeyError, AttributeError, TypeError) as exc:
        raise UsageError(f"{path}: {exc} is missing or malformed") from None
