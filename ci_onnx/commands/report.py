"""`onnx-gate report`: the targets' results as the PR comment, the job summary, the check, the exit code."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ci_onnx.commands.options import out_dir_option, plan_option, results_option
from ci_onnx.contracts.errors import EXIT_FAIL, GateError
from ci_onnx.report import CHECK_NAME

if TYPE_CHECKING:
    from ci_onnx.github.context import GitHubContext
    from ci_onnx.plan import Plan
    from ci_onnx.report.baseline import Baseline
    from ci_onnx.report.policy import Policy


GITHUB = "github"
"""``--baseline github``: the base commit's onnx-gate-baseline artifact, through the REST API."""


def _from_github(ctx: GitHubContext, dest: Path, info: Callable[[str], None]) -> tuple[Baseline | None, str]:
    """The pull request's baseline, or None and why there is none (said in the report)."""
    from ci_onnx.report import baseline

    if ctx.pr_number is None or not ctx.base_sha:
        return None, ""  # not a pull request: absolute, and choose() says so
    if not ctx.can_publish:
        return None, "no baseline: no GITHUB_TOKEN to read the base commit's artifacts with"
    from ci_onnx.github import artifacts
    from ci_onnx.github.client import Client, GitHubError

    assert ctx.repo is not None
    try:
        client = Client(ctx.token, ctx.api_url, log=info)
    except GitHubError as exc:
        return None, f"no baseline: {exc.message}"
    found = artifacts.find(
        client, ctx.repo, base_sha=ctx.base_sha, base_ref=ctx.base_ref, dest=dest, info=info
    )
    if found.directory is None:
        return None, found.note
    info(f"baseline: {found.source}, commit {found.commit[:7]}" + (f" ({found.note})" if found.note else ""))
    try:
        return baseline.load(found.directory, source=found.source, commit=found.commit, note=found.note), ""
    except GateError as exc:  # another schema, no results (its verify jobs died): one line, never exit 2
        return None, f"no baseline: {found.source} cannot be read ({exc.message}), so every failure blocks"


def load_baseline(value: str, dest: Path, github_token: str = "", source: str = "") -> Baseline | None:
    """``--baseline DIR|github``: an earlier run's --out, or the pull request base's artifact (None
    where there is none: not a pull request, no token, no run of the base commit)."""
    from ci_onnx.github.context import from_env
    from ci_onnx.report import baseline

    if value != GITHUB:
        return baseline.load(Path(value), source=source)
    found, why = _from_github(
        from_env(os.environ, token=github_token), dest, lambda m: click.echo(f"onnx-gate: {m}")
    )
    if found is None and why:
        click.echo(f"onnx-gate: {why}")
    return found


def _approved(
    judged_by: Policy,
    base: Baseline | None,
    head: Plan | None,
    ctx: GitHubContext,
    info: Callable[[str], None],
) -> Policy:
    """``judged_by``, or the head's own policy where its loosenings were approved by the label the
    base's config names (ci_onnx/github/approval.py); why a label did not count is said."""
    label = base.plan.gate.approval_label if base is not None and base.plan is not None else ""
    if not (label and judged_by.loosens and ctx.pr_number is not None and ctx.can_publish and ctx.repo):
        return judged_by
    from ci_onnx.github.approval import approval
    from ci_onnx.github.client import Client, GitHubError
    from ci_onnx.report import policy

    try:
        found = approval(Client(ctx.token, ctx.api_url, log=info), ctx.repo, ctx.pr_number, label)
    except GitHubError as exc:
        return dataclasses.replace(
            judged_by, source=f"{judged_by.source}; the approval cannot be read: {exc.message}"
        )
    if found.by:
        assert base is not None
        info(f"the policy changes of this pull request were approved by @{found.by} (label {label!r})")
        return policy.between(
            base.plan, head, pull_request=True, base_commit=base.commit, approved_by=found.by
        )
    if found.why_not:
        return dataclasses.replace(judged_by, source=f"{judged_by.source}; {found.why_not}")
    return judged_by


def _baseline_dest(out: Path, results_dirs: Sequence[Path]) -> Path:
    """Where the base's artifact is unpacked: beside the report, unless that lies among the head's
    results (a results folder that holds the whole --out), where a base result would stand in for a
    missing head one; then a folder of its own."""
    dest = out / "baseline"
    if any(dest.resolve().is_relative_to(r.resolve()) for r in results_dirs):
        import tempfile

        return Path(tempfile.mkdtemp(prefix="onnx-gate-baseline-"))
    return dest


def _refuse_own_output(directory: Path, out: Path, results_dirs: Sequence[Path]) -> None:
    """A baseline must be another run's: the head's own --out would make every failure "known", and
    one inside --results would fill a missing head target with the base's result."""
    from ci_onnx.contracts.errors import UsageError

    where = directory.resolve()
    if where == out.resolve():
        raise UsageError(f"--baseline {directory}: that is this report's own --out; give the base commit's")
    for r in results_dirs:
        if where.is_relative_to(r.resolve()) or r.resolve().is_relative_to(where):
            raise UsageError(
                f"--baseline {directory} and --results {r}: one holds the other; keep the base's results "
                "apart from the head's"
            )


@click.command()
@results_option("Directories holding results/*.json (searched recursively); repeatable.")
@plan_option("The plan JSON, so that targets that never reported count as missing.")
@out_dir_option("Writes report.md (the full report) and summary.md here.")
@click.option(
    "--junit",
    "junit_paths",
    type=click.Path(path_type=Path, exists=True),
    multiple=True,
    help="JUnit XML from other tools (files or directories), shown in the report; failures block.",
)
@click.option(
    "--github-token",
    envvar="GITHUB_TOKEN",
    default="",
    show_default=False,
    help="Token for the PR comment and the check run [env: GITHUB_TOKEN]. Without one, nothing is sent.",
)
@click.option("--pr", "pr_number", type=int, help="The pull request to comment on (default: from the event).")
@click.option("--check-name", default=CHECK_NAME, show_default=True, help="Name of the check run / status.")
@click.option("--comment-key", default="", help="Tells apart the comments of several configs on one PR.")
@click.option(
    "--publish/--no-publish",
    default=True,
    show_default=True,
    help="Comment and set the check on GitHub when a token and repository are known.",
)
@click.option(
    "--baseline",
    "baseline_dir",
    metavar="DIR|github",
    help="The base commit's results, to judge what changed: the --out of an earlier run, or `github`: "
    "the onnx-gate-baseline artifact of the run of the pull request's base commit (needs actions: read).",
)
@click.option(
    "--reverified",
    "reverified_dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="A pull request from a fork: the --out of `onnx-gate reverify` on its bundles. Its results "
    "replace the fork's; a cell it could not verify again is judged by the base's gate.fork_results.",
)
def report(
    results_dirs: Sequence[Path],
    plan_path: Path | None,
    out: Path,
    junit_paths: Sequence[Path],
    github_token: str,
    pr_number: int | None,
    check_name: str,
    comment_key: str,
    publish: bool,
    baseline_dir: str | Path | None = None,
    reverified_dir: Path | None = None,
    baseline_source: str = "",
    commit: str = "",
) -> None:
    """Aggregate target results into one report: PR comment, job summary, check, exit code.

    ``baseline_source`` and ``commit`` are for `onnx-gate run` (what the baseline is, and the commit
    of these results), not options."""
    from ci_onnx.contracts import escape
    from ci_onnx.github import workflow
    from ci_onnx.github.context import from_env
    from ci_onnx.plan import read_plan
    from ci_onnx.report import baseline, charts, gate, junit_reader, limits, policy, render, view
    from ci_onnx.report.collect import collect

    ctx = from_env(os.environ, token=github_token, pr_number=pr_number)
    the_plan = read_plan(plan_path) if plan_path else None
    record, said = None, ""
    if reverified_dir is not None:
        from ci_onnx.report import fork
        from ci_onnx.verify import reverify

        record = reverify.read(reverified_dir)
        if the_plan is not None:  # no skip or reuse the fork's plan claims beyond what onnx-gate gives
            the_plan = fork.trusted_plan(the_plan)
    junit = junit_reader.read(junit_paths) if junit_paths else None
    report_file = out / "report.md"

    def info(msg: str) -> None:
        click.echo(f"onnx-gate: {msg}")

    missing = ""
    if baseline_dir is not None and baseline_dir != GITHUB:
        _refuse_own_output(Path(baseline_dir), out, results_dirs)
    if baseline_dir == GITHUB:
        base, missing = _from_github(ctx, _baseline_dest(out, results_dirs), info)
    else:
        base = baseline.load(Path(baseline_dir), source=baseline_source) if baseline_dir else None
    # a model unchanged since the base was not run: its results are the base's
    # (ci_onnx/orchestration/reuse.py)
    collection = collect(results_dirs, the_plan, base.results if base is not None else None)
    # the base's policy judges a pull request (or any comparison with a base), never the head's own
    judged_by = policy.between(
        base.plan if base is not None else None,
        the_plan,
        pull_request=ctx.pr_number is not None or base is not None,
        base_commit=base.commit if base is not None else "",
    )
    judged_by = _approved(judged_by, base, the_plan, ctx, info)
    if record is not None:
        assert reverified_dir is not None
        collection, said = fork.judge(
            collection,
            collect([reverified_dir], the_plan),
            record,
            accept=judged_by.settings.fork_results == "accept",
        )
        info(said)
    mode, why = gate.choose(
        judged_by.settings.mode,
        baseline=base is not None,
        pull_request=ctx.pr_number is not None,
    )
    why = "; ".join(w for w in (missing or why, said) if w)
    decided = gate.decide(
        collection,
        the_plan,
        base,
        mode=mode,
        why=why,
        junit_failed=junit.failed + junit.errors if junit else 0,
        judged_by=judged_by,
    )
    the_view = view.build(
        collection,
        decided,
        commit=view.Commit(ctx.sha, ctx.commit_url),
        run_url=ctx.run_url,
        junit=junit,
        report_file=str(report_file),
    )
    out.mkdir(parents=True, exist_ok=True)
    report_file.write_text(render.render(the_view))
    charts.write_svgs(out, the_view.charts)  # the report's charts, as files beside it
    if commit or ctx.sha:  # what a later run compares with: these results' commit and bundles
        baseline.write_meta(out, commit or ctx.sha, baseline.bundles_of(collection))
    summary = render.render_within(the_view, limits.JOB_SUMMARY)
    (out / "summary.md").write_text(summary)
    if ctx.step_summary:
        workflow.append_summary(ctx.step_summary, summary)

    def warn(msg: str) -> None:
        click.echo(
            workflow.annotation("warning", msg, title="onnx-gate")
            if ctx.in_actions
            else f"onnx-gate: warning: {msg}"
        )

    if ctx.in_actions:
        for f in the_view.failures[:10]:  # GitHub shows at most 10 error annotations per step
            said = f"{f.reason} (what this means: {f.url})" if f.url else f.reason
            click.echo(workflow.annotation("error", said, title=f"{f.target} {f.outcome}"))
    if publish and ctx.can_publish:
        # requests and the publishing code only when something is sent (about 0.1 s of start-up)
        from ci_onnx.github.client import Client, GitHubError
        from ci_onnx.report.publish import publish as publish_report

        try:
            client = Client(ctx.token, ctx.api_url, log=info)
        except GitHubError as exc:  # a token that cannot be sent: the report stands, nothing is posted
            warn(f"nothing was posted: {exc.message}")
        else:
            publish_report(
                the_view,
                ctx,
                client,
                info=info,
                warn=warn,
                check_name=check_name,
                config_path=collection.config_path or "onnx-gate.yml",
                comment_key=comment_key,
            )
    elif publish and ctx.in_actions:
        warn("no GITHUB_TOKEN (or --github-token): the report is in the job summary only")
    if ctx.output:
        workflow.set_outputs(
            ctx.output,
            {
                "verdict": "fail" if decided.blocks else "pass",
                "failed": str(len(decided.blocking)),
                "report": str(report_file),
            },
        )
    # Result text can come from a fork: one capped line each, so none of it can start a workflow command.
    for problem in [*collection.problems, *(junit.parse_errors if junit else ())][:20]:
        click.echo("  💥 " + escape.line(problem))
    for f in the_view.failures[:20]:
        click.echo("  " + escape.line(f"{f.icon} {f.target}: {f.reason}"))
        if f.url:
            click.echo("     what this means: " + escape.line(f.url))
    if len(the_view.failures) > 20:
        click.echo(f"  … and {len(the_view.failures) - 20} more")
    for line in the_view.ledger[:20]:
        click.echo("  " + escape.line(line))
    mark = "❌" if decided.blocks else "✅"
    click.echo(f"onnx-gate: {escape.line(the_view.judged_by)}")
    click.echo(escape.line(f"{mark} {the_view.headline}; the full report: {report_file}"))
    if decided.blocks:
        raise click.exceptions.Exit(EXIT_FAIL)
