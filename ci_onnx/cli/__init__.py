"""The ``onnx-gate`` command: the only place that reads the process environment and exits.

Exit codes (ci_onnx.contracts.errors declares them): 0 the gate passed, 1 the gate failed, 2 bad usage or
configuration, 3 an internal or environment error. ``onnx-gate --help`` imports neither torch nor
onnxruntime: every command imports what it needs when it runs.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Sequence
from typing import Any, NoReturn

import click

from ci_onnx import __version__
from ci_onnx.commands.export import export
from ci_onnx.commands.init import init
from ci_onnx.commands.nightly import nightly
from ci_onnx.commands.plan import plan
from ci_onnx.commands.report import report
from ci_onnx.commands.reverify import reverify
from ci_onnx.commands.run import run
from ci_onnx.commands.triage import triage
from ci_onnx.commands.verify import verify
from ci_onnx.contracts.errors import (
    EXIT_FAIL,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_PASS,
    EXIT_USAGE,
    GateError,
)

COMMANDS = {
    "plan": "Expand the target matrix from onnx-gate.yml.",
    "export": "Export the model once per opset and exporter, check it, write bundles.",
    "verify": "Verify one target on its runtime: parity, decisions, batches, placement, latency.",
    "triage": "Where a failing cell first diverges, whose fault it is, and a minimal reproduction.",
    "reverify": "Verify a fork's bundles again, with no token, for the trusted report.",
    "report": "Aggregate results into the PR comment, job summary, check and exit code.",
    "nightly": "Keep one tracking issue per target broken by a new runtime release.",
    "run": "All of it on this machine, each runtime in its own environment.",
    "init": "Write a starter onnx-gate.yml and GitHub workflows.",
}
"""``onnx-gate --help`` lists the commands once, in the order a run goes through them."""


class _Interrupted(BaseException):
    """A KeyboardInterrupt on its way out of click, which would turn it into exit code 1."""


class GateGroup(click.Group):
    """Turns GateErrors into one line on stderr and their exit code; anything else is a bug.

    Ctrl-C ends every child process at once and stays a KeyboardInterrupt for whoever called the
    command: :func:`main` turns it into exit code 130; a caller in the same process (a test through
    click's CliRunner, the action's entry point) is interrupted too instead of reading an exit code."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(self.commands, key=lambda name: list(COMMANDS).index(name) if name in COMMANDS else 99)

    def main(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().main(*args, **kwargs)
        except _Interrupted:
            raise KeyboardInterrupt from None

    def invoke(self, ctx: click.Context) -> Any:
        from ci_onnx.contracts import proc

        try:
            with proc.interruptible():
                return super().invoke(ctx)
        except GateError as exc:
            click.echo(f"onnx-gate: error: {exc.message}", err=True)
            ctx.exit(exc.exit_code)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except KeyboardInterrupt:
            raise _Interrupted from None
        except Exception:
            traceback.print_exc()
            click.echo(
                "onnx-gate: internal error (a bug in onnx-gate, not in your model); please report it with "
                "the traceback above",
                err=True,
            )
            ctx.exit(EXIT_INTERNAL)


EXIT_CODES = (
    (EXIT_PASS, "the gate passed"),
    (EXIT_FAIL, "the gate failed (a check failed, a target errored or is missing)"),
    (EXIT_USAGE, "bad usage or configuration (one line naming the file, line and key)"),
    (EXIT_INTERNAL, "an internal or environment error (a package index, a venv, a bug)"),
    (EXIT_INTERRUPTED, "interrupted (Ctrl-C); every child process is ended"),
)
"""What every command exits with, shown by ``--help`` (and the docs' command reference)."""


@click.group(
    cls=GateGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110},
    epilog="\b\nExit codes:\n" + "\n".join(f"  {code:<4} {meaning}" for code, meaning in EXIT_CODES),
)
@click.version_option(__version__, prog_name="onnx-gate")
def cli() -> None:
    """A CI gate for models that ship as ONNX: plan, export, verify and report in CI, or `run` it all
    on this machine."""


for _command in (plan, export, verify, triage, reverify, report, nightly, run, init):
    cli.add_command(_command)
for _name, _help in COMMANDS.items():
    cli.commands[_name].short_help = _help


def main(argv: Sequence[str] | None = None) -> NoReturn:
    from ci_onnx.contracts import proc

    proc.end_children_on_signals()  # a signal to onnx-gate ends its runners, browsers and adb calls
    try:
        cli.main(args=list(argv) if argv is not None else None, prog_name="onnx-gate")
    except KeyboardInterrupt:
        click.echo("onnx-gate: interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    sys.exit(EXIT_PASS)
