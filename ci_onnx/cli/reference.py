"""Render the command reference (the docs' reference/cli.md table) from the CLI itself.

Each command's row is its synopsis, built from its click parameters, and its one-line help; the exit
codes come from ``ci_onnx.cli.EXIT_CODES``, the list ``--help`` shows. ``python -m
ci_onnx.cli.docs_reference --write`` splices it into the page, and a test keeps the page in step (an
option added to a command and not to the page fails it).
"""

from __future__ import annotations

from typing import Any

import click

BEGIN = "<!-- cli-reference:begin (python -m ci_onnx.cli.docs_reference --write) -->"
END = "<!-- cli-reference:end -->"

_SHORT = {"INTEGER": "N", "INTEGER RANGE": "N", "FLOAT": "S", "FLOAT RANGE": "S"}
"""click's metavars for numbers, shortened as a synopsis writes them."""


def _metavar(param: click.Parameter, ctx: click.Context) -> str:
    if isinstance(param.type, click.Choice):
        return "\\|".join(str(c) for c in param.type.choices)
    if param.metavar:
        return param.metavar.replace("|", "\\|")  # inside a Markdown table cell
    shown = param.type.get_metavar(param, ctx) or param.type.name.upper()
    shown = shown.strip("[]")
    return _SHORT.get(shown, shown)


def _piece(param: click.Parameter, ctx: click.Context) -> str:
    if isinstance(param, click.Argument):
        name = (param.metavar or param.name or "ARG").upper()
        return name if param.required else f"[{name}]"
    assert isinstance(param, click.Option)
    longest = max(param.opts, key=len)
    if param.is_flag and param.secondary_opts:
        text = f"{longest}\\|{max(param.secondary_opts, key=len)}"
    elif param.is_flag:
        text = longest
    else:
        text = f"{longest} {_metavar(param, ctx)}"
    text += "…" if param.multiple else ""
    return text if param.required else f"[{text}]"


def synopsis(name: str, command: click.Command) -> str:
    ctx = click.Context(command, info_name=name)
    shown = [p for p in command.params if not getattr(p, "hidden", False)]
    pieces = [_piece(p, ctx) for p in shown if "--help" not in getattr(p, "opts", ())]
    return " ".join([f"onnx-gate {name}", *pieces])


def render(cli: Any = None) -> str:
    from ci_onnx.cli import EXIT_CODES
    from ci_onnx.cli import cli as group

    cli = cli or group
    ctx = click.Context(cli, info_name="onnx-gate")
    lines = [BEGIN, "", "| command | what it does |", "|---|---|"]
    for name in cli.list_commands(ctx):
        command = cli.commands[name]
        lines.append(f"| `{synopsis(name, command)}` | {command.get_short_help_str(limit=200)} |")
    codes = ", ".join(f"`{code}` {meaning}" for code, meaning in EXIT_CODES)
    lines += ["", f"Exit codes (also in `onnx-gate --help`): {codes}.", "", END]
    return "\n".join(lines)
