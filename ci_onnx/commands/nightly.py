"""`onnx-gate nightly`: one tracking issue per target family broken by a new runtime release."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import click

from ci_onnx.commands.options import (
    config_option,
    default_cache_dir,
    out_dir_option,
    package_index,
    plan_option,
    results_option,
)
from ci_onnx.contracts.errors import EXIT_FAIL


@click.command()
@results_option("Directories holding the night's results/*.json (searched recursively); repeatable.")
@plan_option(
    "The night's plan JSON: it knows which spec (latest, latest-N, nightly) each target came from.",
    required=True,
)
@click.option(
    "--state",
    "state_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="A JSON file remembering the last release that passed per target family; read, then rewritten. "
    "Keep it between nightly runs (actions/cache).",
)
@click.option(
    "--bundles",
    type=click.Path(path_type=Path, file_okay=False),
    help="The night's bundles: verify releases between the last that passed and the first that failed "
    "(an environment per release). Without it, the search uses the night's results only.",
)
@config_option()
@out_dir_option("Writes nightly.md (the night's full report) here.")
@click.option(
    "--github-token",
    envvar="GITHUB_TOKEN",
    default="",
    help="A token that may write issues [env: GITHUB_TOKEN].",
)
@click.option(
    "--label",
    "labels",
    multiple=True,
    default=["onnx-gate-nightly"],
    show_default=True,
    help="Labels for new tracking issues (repeatable); issues are found by a hidden marker, not by label.",
)
@click.option("--date", "night_date", help="The night's date for the issue texts (default: today, UTC).")
@click.option(
    "--dry-run", is_flag=True, help="Say what would be opened, commented on and closed; send nothing."
)
@click.option(
    "--fail-on-broken",
    is_flag=True,
    help="Exit 1 when a target family is broken (by default the issue is the signal and the run exits 0).",
)
def nightly(
    results_dirs: Sequence[Path],
    plan_path: Path,
    state_file: Path | None,
    bundles: Path | None,
    config_path: Path,
    out: Path,
    github_token: str,
    labels: Sequence[str],
    night_date: str | None,
    dry_run: bool,
    fail_on_broken: bool,
) -> None:
    """Keep one tracking issue per broken target family after a nightly run against new releases.

    A family is a target without its resolved release (cpu-op17-dynamo@latest). Broken with no issue:
    open one, naming the first failing release; broken again: comment; green again: close it.
    """
    import datetime

    from ci_onnx.config import cascade
    from ci_onnx.contracts.errors import UsageError
    from ci_onnx.contracts.target import Target
    from ci_onnx.contracts.verify_options import VerifyOptions
    from ci_onnx.github import workflow
    from ci_onnx.github.client import Client
    from ci_onnx.github.context import from_env
    from ci_onnx.host.envs import find_uv
    from ci_onnx.host.resolve import releases_between
    from ci_onnx.nightly import command
    from ci_onnx.nightly.text import Night
    from ci_onnx.nightly.verifier import for_family
    from ci_onnx.plan import read_plan
    from ci_onnx.report.model import Commit

    ctx = from_env(os.environ, token=github_token)
    if not dry_run and not ctx.can_publish:
        raise UsageError(
            "nightly needs a token that may write issues (GITHUB_TOKEN or --github-token) and "
            "GITHUB_REPOSITORY; or pass --dry-run to see what it would do"
        )
    every = cascade.load_all(config_path) if config_path.is_file() else ()
    index = package_index(every)
    night = Night(
        date=night_date or datetime.datetime.now(datetime.UTC).date().isoformat(),
        run_url=ctx.run_url,
        commit=Commit(ctx.sha, ctx.commit_url),
    )
    from ci_onnx.contracts.verify_options import options_from

    the_plan = read_plan(plan_path)
    by_model = {c.model.id: options_from(c) for c in every}

    def options(
        target: Target,
    ) -> VerifyOptions:  # the config's settings of the target's model, else the plan's
        return by_model.get(target.model) or the_plan.options_for(target)

    def info(msg: str) -> None:
        click.echo(f"onnx-gate: {msg}")

    client = None if dry_run else Client(ctx.token, ctx.api_url, log=info)
    outcome = command.run(
        results_dirs,
        the_plan,
        night,
        releases=lambda good, bad, package: releases_between(good, bad, package, index),
        client=client,
        repo=ctx.repo,
        state_file=state_file,
        verifier_for=for_family(
            bundles, out / "nightly-bisect", default_cache_dir(), options, dict(os.environ), uv=find_uv()
        ),
        labels=labels,
        info=info,
    )
    out.mkdir(parents=True, exist_ok=True)
    (out / "nightly.md").write_text(outcome.summary)
    if ctx.step_summary:
        workflow.append_summary(ctx.step_summary, outcome.summary)
    broken = outcome.decided.broken
    click.echo(
        f"{'❌' if broken else '✅'} {len(broken)} broken target famil{'y' if len(broken) == 1 else 'ies'}"
        + (f": {', '.join(broken)}" if broken else "")
    )
    if broken and fail_on_broken:
        raise click.exceptions.Exit(EXIT_FAIL)
