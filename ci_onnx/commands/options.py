"""What the CLI's commands share: common options, where the cache lives (exit codes:
ci_onnx.contracts.errors).

This package and ci_onnx/cli/__init__.py are the edge: the only code that reads the process environment and
decides exit codes.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from ci_onnx.config import Config


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


MAVEN_ENV = "ONNX_GATE_MAVEN"
"""A Maven repository to list and fetch onnxruntime-android from instead of Maven Central (a mirror)."""


def package_index(cfgs: Config | Sequence[Config] | None) -> Any:
    """The resolver of runtime releases, the same for every command: pip's configured index, npm,
    Maven ($ONNX_GATE_MAVEN, else Maven Central), and the config's ``targets.nightly_index`` for
    pre-release look-ups (a command that built its index without it resolved ``nightly`` otherwise;
    of a ``models`` file, the first model's that names one)."""
    from ci_onnx.config import Config
    from ci_onnx.host.resolve import PipIndex

    every = () if cfgs is None else (cfgs,) if isinstance(cfgs, Config) else tuple(cfgs)
    nightly_index = next((c.targets.nightly_index for c in every if c.targets.nightly_index), "")
    return PipIndex(
        extra_index_urls=[nightly_index] if nightly_index else [], maven_url=os.environ.get(MAVEN_ENV, "")
    )


def default_cache_dir() -> Path:
    """$ONNX_GATE_CACHE, else $XDG_CACHE_HOME/onnx-gate, else ~/.cache/onnx-gate."""
    explicit = os.environ.get("ONNX_GATE_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "onnx-gate"


def out_dir_option(help: str, default: str = "onnx-gate-out") -> Any:
    """``--out DIR``: where a command writes what it makes."""
    return click.option(
        "--out",
        type=click.Path(path_type=Path, file_okay=False),
        default=default,
        show_default=True,
        help=help,
    )


def results_option(help: str) -> Any:
    """``--results DIR`` (repeatable): directories searched recursively for results/*.json."""
    return click.option(
        "--results", "results_dirs", type=click.Path(path_type=Path), multiple=True, required=True, help=help
    )


def plan_option(help: str, *, required: bool = False) -> Any:
    """``--plan FILE``: the plan JSON that `onnx-gate plan --out` wrote."""
    return click.option(
        "--plan", "plan_path", type=click.Path(path_type=Path, dir_okay=False), required=required, help=help
    )


def finite(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """A click callback: NaN passes every range check, so refuse it (and infinities) by name."""
    import math

    if value is not None and not math.isfinite(value):
        raise click.BadParameter(f"{value} is not a finite number of seconds", ctx=ctx, param=param)
    return value
