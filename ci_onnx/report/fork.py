"""A fork's results, judged by what the trusted side verified again (ci_onnx/verify/reverify.py).

The fork's run wrote its plan and results; `onnx-gate reverify` verified its bundles again in a job
without a token. Here the re-verified results take the place of the fork's; a result the trusted
side could not verify again is the fork's own claim, which, where it says "passed", blocks as
unverified unless the base's ``gate.fork_results`` is ``accept``. The plan's claims that could
excuse a cell are dropped too: an expected skip onnx-gate's matrix does not give, and a model
"unchanged since the base" (the fork's run plans without a baseline; a plan that says otherwise
was written to borrow the base's results).
"""

from __future__ import annotations

import dataclasses

from ci_onnx.contracts.target import Status
from ci_onnx.plan import Plan
from ci_onnx.report.collect import Collection, Entry
from ci_onnx.verify import reverify
from ci_onnx.verify.reverify import Record


def trusted_plan(plan: Plan) -> Plan:
    """``plan`` with only the skips onnx-gate's matrix gives, and no model reused from the base."""
    skips = reverify.select(plan.targets)[1].expected_skips
    targets = tuple(dataclasses.replace(t, expected_skip=skips.get(t.id, "")) for t in plan.targets)
    models = tuple(dataclasses.replace(m, unchanged_since="", reuse="") for m in plan.models)
    return dataclasses.replace(plan, targets=targets, models=models)


def judge(fork: Collection, trusted: Collection, record: Record, *, accept: bool) -> tuple[Collection, str]:
    """The collection to judge, and one line for the report saying what was verified again."""
    ours = {e.target.id: e for e in trusted.entries}
    entries: list[Entry] = []
    differ: list[str] = []
    unverified = 0
    for e in fork.entries:
        tid = e.target.id
        if tid in record.reverified and tid in ours:
            mine = ours[tid]
            if mine.outcome is not e.outcome:
                differ.append(f"{tid} ({e.outcome.value} in the fork's run, {mine.outcome.value} here)")
                mine = dataclasses.replace(
                    mine, reason=f"{mine.reason} (the fork's run reported {e.outcome.value})".lstrip()
                )
            entries.append(mine)
            continue
        if e.outcome in (Status.EXPECTED, Status.MISSING):
            entries.append(e)
            continue
        unverified += 1
        why = record.not_reverified.get(tid, record.lost or "the fork's plan does not list it")
        if e.outcome is Status.PASSED and not accept:
            entries.append(
                Entry(
                    e.target,
                    Status.MISSING,
                    None,
                    f"not verified again ({why}): the fork's own result says passed, and a fork's run can "
                    "write any result; gate.fork_results: accept in the base's config takes it as reported",
                    reuse=e.reuse,
                )
            )
        else:  # a failure the fork reports is believed: a fork can only hurt itself with one
            entries.append(
                dataclasses.replace(e, reason=f"{e.reason} (the fork's own result, not verified again)")
            )
    n = len(record.reverified)
    line = f"a pull request from a fork: {n} of {n + unverified} cells verified again by the trusted workflow"
    if record.lost:
        line += f" ({record.lost})"
    if unverified:
        line += f"; {unverified} the fork's own " + ("(accepted)" if accept else "(blocking when they pass)")
    if differ:
        line += "; differs from the fork's run: " + ", ".join(differ[:5]) + (" …" if len(differ) > 5 else "")
    return dataclasses.replace(fork, entries=tuple(entries), problems=fork.problems + trusted.problems), line
