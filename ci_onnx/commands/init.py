"""`onnx-gate init`: a starter onnx-gate.yml and GitHub workflows."""

from __future__ import annotations

from pathlib import Path

import click

from ci_onnx.orchestration.scaffold import DEFAULT_ACTION


@click.command()
@click.argument("directory", type=click.Path(path_type=Path, file_okay=False), default=".")
@click.option(
    "--action",
    default=DEFAULT_ACTION,
    show_default=True,
    metavar="OWNER/REPO@REF",
    help="The action the workflows use (a fork, a pinned tag or commit).",
)
@click.option(
    "--fork-safe",
    is_flag=True,
    help="For pull requests from forks: an untrusted gate run plus a workflow_run job that comments.",
)
@click.option(
    "--onnx",
    "onnx_file",
    metavar="MODEL.onnx",
    default="",
    help="The model is an ONNX file exported elsewhere: write the ONNX-only onnx-gate.yml for it.",
)
@click.option(
    "--android",
    is_flag=True,
    help="Add the android runner's cells (an x86_64 emulator over adb) and the verify-android job.",
)
@click.option(
    "--composite",
    is_flag=True,
    help="Every job through the composite action (ACTION/runner), which installs onnx-gate on the runner: "
    "no image to pull from ghcr.io.",
)
@click.option(
    "--models",
    "model_names",
    metavar="NAME,NAME…",
    default="",
    help="Several models in one gate: the `models:` form, one block per name (factory NAME/model.py:build).",
)
@click.option("--force", is_flag=True, help="Overwrite files that are already there.")
def init(
    directory: Path,
    action: str,
    fork_safe: bool,
    onnx_file: str,
    android: bool,
    composite: bool,
    model_names: str,
    force: bool,
) -> None:
    """Write a commented onnx-gate.yml and starter GitHub workflows into DIRECTORY.

    \b
    onnx-gate.yml                          the configuration, every key commented
    .github/workflows/onnx-gate.yml        the pull-request gate (plan, export, verify, report)
    .github/workflows/onnx-gate-nightly.yml  the same plan nightly, against the newest runtimes
    .gitignore                             onnx-gate-out/ added (what every command writes)
    With --fork-safe, onnx-gate.yml posts nothing and onnx-gate-comment.yml comments from workflow_run.
    """
    from ci_onnx.contracts.errors import UsageError
    from ci_onnx.orchestration import scaffold

    if onnx_file and not (directory / onnx_file).is_file():
        raise UsageError(
            f"--onnx {onnx_file}: no such file in {directory} (onnx-gate.yml names it relative to "
            "its own directory)"
        )
    names = [n.strip() for n in model_names.split(",") if n.strip()]
    if names and onnx_file:
        raise UsageError("--models and --onnx: give one (several torch models, or one ONNX file)")
    from ci_onnx.config.cascade import name_pattern

    for name in names:
        if not name_pattern().match(name) or names.count(name) > 1:
            raise UsageError(
                f"--models: {name!r} cannot be a model's name here: names are unique, a letter then up "
                "to 39 letters, digits, - or _ (they are part of target ids)"
            )
    settings = scaffold.Settings(action=action, android=android, composite=composite)
    files = scaffold.starter_files(settings, fork_safe=fork_safe, onnx=onnx_file, models=names)
    for path in scaffold.write(directory, files, force=force):
        click.echo(f"wrote {path}")
    ignored = scaffold.ignore_output(directory)
    if ignored:
        click.echo(f"added {scaffold.IGNORED} to {ignored}")
    click.echo(
        (
            "next: optionally put test data under test_data/ (see model.test_data)"
            if onnx_file
            else "next: point each model's factory in onnx-gate.yml at its model"
            if names
            else "next: point model.factory in onnx-gate.yml at your model"
        )
        + ", run `onnx-gate plan`, commit, and make "
        f"the check '{scaffold.CHECK_NAME}' required for pull requests"
    )
