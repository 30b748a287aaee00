"""`onnx-gate reverify`: a fork's bundles verified again on the trusted side, with no token."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import click

from ci_onnx.commands.options import default_cache_dir, finite, out_dir_option


@click.command()
@click.option(
    "--plan",
    "plan_path",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    required=True,
    help="The plan the fork's run uploaded: which cells it claims (each used only through its id).",
)
@click.option(
    "--bundles",
    "bundles_root",
    type=click.Path(path_type=Path, file_okay=False),
    required=True,
    help="The fork's bundles, as download-artifact lays them out (DIR/onnx-gate-bundle-<key>).",
)
@out_dir_option("Writes results/<id>.json, junit/<id>.xml and reverified.json here.")
@click.option(
    "--timeout",
    "timeout_s",
    type=click.FloatRange(min=1, max=604_800),
    callback=finite,
    help="Seconds before a runner is stopped (default: the plan's verify.timeout_s).",
)
@click.option("--jobs", "-j", type=click.IntRange(min=1, max=256), help="Runner processes at once.")
def reverify(
    plan_path: Path, bundles_root: Path, out: Path, timeout_s: float | None, jobs: int | None
) -> None:
    """Verify a fork's bundles again, in a job that holds no token, for `report --reverified`.

    \b
    The bundles are data (the ONNX file, inputs, references): observing them runs none of the fork's
    code. Each cell is rebuilt from its id, so its environment is made from onnx-gate's own matrix
    data; a cell that needs a machine or set-up this job lacks (a GPU, a browser, Node, a device) is
    listed as not re-verified, and the report judges the fork's own result for it by the base's
    gate.fork_results. No triage runs here. The exit code is 0 unless the command cannot start:
    verdicts are the report's.
    """
    from ci_onnx.contracts import proc
    from ci_onnx.orchestration import localrun
    from ci_onnx.plan import read_plan
    from ci_onnx.runners.base import Provisioning
    from ci_onnx.verify import job, reverify

    the_plan = read_plan(plan_path)
    chosen, record = reverify.select(the_plan.targets)
    out.mkdir(parents=True, exist_ok=True)
    (out / reverify.RECORD).write_text(record.to_json())  # first: the report reads it even if all die
    how = Provisioning(default_cache_dir(), proc.child_environment(os.environ))  # no token reaches it
    for model in dict.fromkeys(t.model for t in chosen):
        mine = [t for t in chosen if t.model == model]
        options = dataclasses.replace(
            the_plan.options_for(mine[0]),
            triage_timeout_s=0,  # triage is for the fork's own run; nothing here is worth its time
            paired_bundles="",
        )
        if timeout_s:
            options = dataclasses.replace(options, timeout_s=timeout_s)
        found = job.verify_all(
            [(job.bundle_for(bundles_root, t.bundle_key), t) for t in mine],
            out,
            options,
            how=how,
            jobs=jobs or localrun.default_jobs(proc.cpu_count()),
            record_errors=True,
        )
        for t in mine:
            value = found[t.id]
            said = value.result.status.value if not isinstance(value, Exception) else "error"
            click.echo(f"{t.id}: re-verified: {said}")
    for tid, why in record.not_reverified.items():
        click.echo(f"{tid}: not re-verified: {why}")
    for tid, why in record.expected_skips.items():
        click.echo(f"{tid}: expected skip: {why}")
