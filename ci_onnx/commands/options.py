"""What the CLI's commands share: exit codes, common options, where the cache lives.

This package and ci_onnx/cli.py are the edge: the only code that reads the process environment and
decides exit codes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

EXIT_PASS, EXIT_FAIL, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


def config_option(**kwargs: Any) -> Any:
    return click.option(
        "--config",
        "config_path",
        type=click.Path(path_type=Path, dir_okay=False),
        default="onnx-gate.yml",
        show_default=True,
        help="The onnx-gate.yml to read.",
        **kwargs,
    )


only_option = click.option(
    "--only",
    multiple=True,
    metavar="GLOB",
    help="Keep targets whose id matches GLOB (repeatable), e.g. 'ort1.2*-cpu-*'.",
)


def default_cache_dir() -> Path:
    """$ONNX_GATE_CACHE, else $XDG_CACHE_HOME/onnx-gate, else ~/.cache/onnx-gate."""
    explicit = os.environ.get("ONNX_GATE_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "onnx-gate"
