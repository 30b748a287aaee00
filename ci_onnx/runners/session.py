"""Session-options presets on the host's side: which exist, which a kind applies, what the observer is told.

The presets are data (matrix/session_options.toml, plus the config's ``targets.session_presets``);
this module reads them for the plan and the config, and gives the python observer the resolved preset
as JSON (``--session-options``), so a user preset needs no config file in the environment, where
ci_onnx.observer.session applies it. ``default`` is the runtime's own defaults: nothing is set, and its
cells keep the ids they had before presets existed. A runner kind whose row in runners.toml does not
declare ``can.session_options`` is planned as an expected skip for every non-default preset, with
the reason, rather than verified under settings it ignored.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ci_onnx import matrix
from ci_onnx.contracts.target import DEFAULT_SESSION_OPTIONS
from ci_onnx.observer.session import PROCESS_WIDE, Preset, PresetError, preset_from

FILE = "session_options.toml"


@functools.cache
def builtin() -> dict[str, Preset]:
    """The presets declared in matrix/session_options.toml."""
    import tomllib

    from ci_onnx import _data

    data = tomllib.loads((_data.matrix_dir() / FILE).read_text())["session_options"]
    out = {}
    for name, row in data.items():
        try:
            out[name] = preset_from(name, row)
        except PresetError as exc:
            raise PresetError(f"{FILE}: session_options.{name}: {exc}") from None
    return out


def presets(user: Mapping[str, Mapping[str, Any]]) -> dict[str, Preset]:
    """The built-in presets and the config's own (a name of the table may not be redefined)."""
    out = dict(builtin())
    for name, row in user.items():
        if name in out:
            raise PresetError(
                f"{name!r} is a built-in preset ({out[name].describe()}); give yours another name"
            )
        out[name] = preset_from(name, row)
    return out


def resolve(name: str, user: Mapping[str, Mapping[str, Any]]) -> Preset:
    """The preset ``name``; an unknown one raises PresetError listing the known names."""
    known = presets(user)
    if name not in known:
        raise PresetError(f"unknown session-options preset {name!r}; known: {', '.join(known)}")
    return known[name]


def cannot_apply(runner: str, preset: str) -> str:
    """Why ``runner`` cannot verify a cell under ``preset``, or '' when it can."""
    kinds = matrix.runners()
    if preset == DEFAULT_SESSION_OPTIONS or kinds[runner].can.session_options:
        return ""
    able = [name for name, info in kinds.items() if info.can.session_options]
    return (
        f"the {runner} runner does not apply session-options presets (only {', '.join(able)} does); "
        f"preset {preset!r} is verified on the {' or '.join(able)} runner"
    )


CACHE_DIR = "onnx-gate-optimized"
"""Where, in a python runner's environment, the optimized-model cache lives (ci_onnx.observer.optcache)."""


def process_wide(name: str, user: Mapping[str, Mapping[str, Any]]) -> bool:
    """Whether preset ``name`` sets state of the whole process (:data:`PROCESS_WIDE`)."""
    if name == DEFAULT_SESSION_OPTIONS:
        return False
    settings = resolve(name, user).settings()
    return any(settings.get(k) is not None for k in PROCESS_WIDE)


def runner_args(
    target_preset: str, user: Mapping[str, Mapping[str, Any]], env_path: Path | None
) -> list[str]:
    """The python observer's arguments for a cell's preset and its optimized-model cache (none
    without ``env_path``)."""
    args = ["--opt-cache", str(env_path / CACHE_DIR)] if env_path is not None else []
    if target_preset != DEFAULT_SESSION_OPTIONS:
        args += ["--session-options", resolve(target_preset, user).to_json()]
    return args
