"""`onnx-gate nightly` without the command line: results and plan in, issues and the state file out."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path

from ci_onnx.contracts.errors import EnvironmentProblem, UsageError
from ci_onnx.github.client import Client
from ci_onnx.github.context import Repo
from ci_onnx.nightly import publish, state, text
from ci_onnx.nightly.families import group
from ci_onnx.nightly.night import Decided, OpenIssue, Releases, VerifierFor, decide
from ci_onnx.plan import Plan
from ci_onnx.report import gate, limits, render, view
from ci_onnx.report.collect import collect

Say = Callable[[str], None]


@dataclasses.dataclass(frozen=True)
class Outcome:
    decided: Decided
    done: tuple[publish.Done, ...]
    summary: str
    """The night's full report (Markdown), for the job summary."""


def run(
    results: Sequence[Path],
    plan: Plan,
    night: text.Night,
    *,
    releases: Releases,
    client: Client | None,
    repo: Repo | None,
    state_file: Path | None = None,
    verifier_for: VerifierFor = lambda _f: None,
    labels: Sequence[str] = (),
    info: Say = lambda _m: None,
) -> Outcome:
    """Decide and, with a client, carry out; without one (a dry run) only say what would be done.

    The state file is written before any issue is changed, so GitHub refusing a change loses no memory.
    Raises EnvironmentProblem (exit 3) after doing all it could when GitHub refused something.
    """
    if not plan.targets:
        raise UsageError("the plan has no targets; `onnx-gate plan --format json --out plan.json` writes one")
    collection = collect(results, plan)
    judged = gate.decide(collection, plan, mode=gate.Mode.ABSOLUTE, why="the nightly judges absolutely")
    report_view = view.build(
        collection, judged, commit=night.commit, run_url=night.run_url, title="onnx-gate nightly"
    )
    summary = render.render_within(report_view, limits.JOB_SUMMARY)
    families = group(collection, judged)
    open_issues: dict[str, OpenIssue] = {}
    if client is not None and repo is not None:
        open_issues = publish.open_tracking_issues(client, repo)
    memory = state.read_memory(state_file)
    decided = decide(
        families, open_issues, memory, night, releases=releases, verifier_for=verifier_for, log=info
    )
    if state_file is not None:
        state.write_memory(state_file, decided.memory)
    for fid in sorted(set(open_issues) - {f.key.id for f in families}):
        info(f"{fid}: not in this night's results; its issue #{open_issues[fid].number} is left as is")
    if client is None or repo is None:
        for a in decided.actions:
            info(f"{a.family}: would {a.kind.value} its issue (dry run)")
        return Outcome(decided, (), summary)
    done, errors = publish.apply(client, repo, decided.actions, labels=labels, info=info)
    if errors:
        raise EnvironmentProblem("; ".join(errors))
    return Outcome(decided, tuple(done), summary)
