"""``python -m ci_onnx.action``: the entry point of the container action and of the composite one.

This is an edge, like ci_onnx/cli/: it reads the environment GitHub gives a step, changes directory, and
exits with the CLI's exit code after writing the ``verdict`` output.
"""

from __future__ import annotations

import os
import sys
from collections.abc import MutableMapping
from pathlib import Path

import click

from ci_onnx import action
from ci_onnx.action import pr_context, runtime
from ci_onnx.contracts.errors import EXIT_FAIL, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_PASS, GateError
from ci_onnx.github import workflow


def run(environ: MutableMapping[str, str]) -> int:
    """Run the command the inputs ask for; returns its exit code."""
    from ci_onnx.cli import cli

    try:
        inputs = action.Inputs.from_env(environ)
        argv = action.to_argv(inputs)
        workdir = inputs.get("working-directory")
        if workdir:
            os.chdir(workdir)
        if inputs.command == "verify" and inputs.flag("install-runtime", default=True):
            change = runtime.plan_change_for(action.split_multi(inputs.get("target")))
            if change.needed:
                click.echo(workflow.group(f"onnx-gate: installing {' '.join(change.requirements)}"))
                runtime.apply(change)
                click.echo(workflow.endgroup())
        if inputs.command == "report":
            pr_context.apply(
                inputs.get("pull-request"), inputs.get("head-sha"), environ, inputs.get("github-token")
            )
    except GateError as exc:
        click.echo(workflow.annotation("error", exc.message, title="onnx-gate"), err=True)
        return exc.exit_code
    click.echo(f"onnx-gate {' '.join(action.redact(argv))}")
    try:
        cli.main(args=argv, prog_name="onnx-gate", standalone_mode=True)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (EXIT_PASS if exc.code is None else EXIT_INTERNAL)
        return code
    except KeyboardInterrupt:  # the job was cancelled: its children are ended already
        click.echo("onnx-gate: interrupted", err=True)
        return EXIT_INTERRUPTED
    return EXIT_PASS


def main() -> None:
    from ci_onnx.contracts import proc

    proc.end_children_on_signals()  # a cancelled step ends its runners as `onnx-gate` does
    code = run(os.environ)
    github_output = os.environ.get("GITHUB_OUTPUT")
    if github_output:
        with Path(github_output).open("a") as fh:
            fh.write(f"verdict={action.verdict(code)}\n")
    sys.exit(step_exit(os.environ.get("INPUT_COMMAND", ""), code))


def step_exit(command: str, code: int) -> int:
    """The step's exit code: a verify step whose target failed still succeeds (its result says so,
    and its ``verdict`` output is ``fail``): whether a failure blocks is the report's to say, and a
    known or expected one does not, so a red verify job would only contradict a green gate. Bad
    usage and errors still fail the step."""
    if command.strip() == "verify" and code == EXIT_FAIL:
        click.echo("onnx-gate: the target failed; the report job decides whether that blocks")
        return EXIT_PASS
    return code


if __name__ == "__main__":
    main()
