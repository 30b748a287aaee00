"""Session-options presets: named SessionOptions settings, a matrix axis (``targets.session_options``).

The presets are data (matrix/session_options.toml, plus the config's
``targets.session_presets``); this module reads them on the gate's side, and on the runner's side builds
an onnxruntime SessionOptions from one. ``default`` is the runtime's own defaults: nothing is set, and
its cells keep the ids they had before presets existed. The runner receives the resolved preset as
JSON (``--session-options``), so a user preset needs no config file on the runner.

The python runner applies presets; a runner kind that cannot (``APPLIES``) is planned as an expected
skip for every non-default preset, with the reason, rather than verified under settings it ignored.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ci_onnx.target import DEFAULT_SESSION_OPTIONS

FILE = "session_options.toml"
APPLIES = ("python",)
"""Runner kinds whose observer applies a preset."""

LEVELS = {
    "disable": "ORT_DISABLE_ALL",
    "basic": "ORT_ENABLE_BASIC",
    "extended": "ORT_ENABLE_EXTENDED",
    "all": "ORT_ENABLE_ALL",
}
MODES = {"sequential": "ORT_SEQUENTIAL", "parallel": "ORT_PARALLEL"}
KEYS = ("graph_optimization_level", "intra_op_threads", "inter_op_threads", "execution_mode", "mem_pattern")


@dataclasses.dataclass(frozen=True)
class Preset:
    """One named preset; a setting left as None keeps the runtime's default."""

    name: str
    graph_optimization_level: str | None = None
    intra_op_threads: int | None = None
    inter_op_threads: int | None = None
    execution_mode: str | None = None
    mem_pattern: bool | None = None

    def settings(self) -> dict[str, Any]:
        """The settings it changes, by key (empty for the runtime's defaults)."""
        return {k: getattr(self, k) for k in KEYS if getattr(self, k) is not None}

    def describe(self) -> str:
        parts = [f"{k}={v}" for k, v in self.settings().items()]
        return f"{self.name} ({', '.join(parts) or 'the runtime defaults'})"

    def to_json(self) -> str:
        return json.dumps({"name": self.name, **self.settings()}, sort_keys=True, separators=(",", ":"))


class PresetError(ValueError):
    """A preset that names an unknown setting or value; the caller names the file or key."""


def preset_from(name: str, row: Mapping[str, Any]) -> Preset:
    """A Preset from its table row; an unknown key or value raises PresetError naming it."""
    unknown = [k for k in row if k not in KEYS and k != "name"]
    if unknown:
        raise PresetError(f"{unknown[0]!r} is not a session option; known: {', '.join(KEYS)}")
    level, mode = row.get("graph_optimization_level"), row.get("execution_mode")
    if level is not None and level not in LEVELS:
        raise PresetError(f"graph_optimization_level {level!r} is not one of {', '.join(LEVELS)}")
    if mode is not None and mode not in MODES:
        raise PresetError(f"execution_mode {mode!r} is not one of {', '.join(MODES)}")
    for key in ("intra_op_threads", "inter_op_threads"):
        value = row.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise PresetError(f"{key} {value!r} is not a thread count (0 = the runtime's choice)")
    mem = row.get("mem_pattern")
    if mem is not None and not isinstance(mem, bool):
        raise PresetError(f"mem_pattern {mem!r} is not true or false")
    return Preset(name=name, **{k: row[k] for k in KEYS if k in row})


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
    if preset == DEFAULT_SESSION_OPTIONS or runner in APPLIES:
        return ""
    return (
        f"the {runner} runner does not apply session-options presets (only {', '.join(APPLIES)} does); "
        f"preset {preset!r} is verified on the python runner"
    )


CACHE_DIR = "onnx-gate-optimized"
"""Where, in a python runner's environment, the optimized-model cache lives (ci_onnx.observer.optcache)."""


def runner_args(
    target_preset: str, user: Mapping[str, Mapping[str, Any]], env_path: Path | None
) -> list[str]:
    """The python observer's arguments for a cell's preset and its optimized-model cache (none
    without ``env_path``)."""
    args = ["--opt-cache", str(env_path / CACHE_DIR)] if env_path is not None else []
    if target_preset != DEFAULT_SESSION_OPTIONS:
        args += ["--session-options", resolve(target_preset, user).to_json()]
    return args


def apply(ort: Any, so: Any, settings: Mapping[str, Any]) -> Any:
    """Set ``settings`` (a preset's, as :meth:`Preset.settings` or its JSON) on SessionOptions ``so``."""
    level = settings.get("graph_optimization_level")
    if level is not None:
        so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, LEVELS[level])
    if settings.get("intra_op_threads") is not None:
        so.intra_op_num_threads = int(settings["intra_op_threads"])
    if settings.get("inter_op_threads") is not None:
        so.inter_op_num_threads = int(settings["inter_op_threads"])
    mode = settings.get("execution_mode")
    if mode is not None:
        so.execution_mode = getattr(ort.ExecutionMode, MODES[mode])
    if settings.get("mem_pattern") is not None:
        so.enable_mem_pattern = bool(settings["mem_pattern"])
    return so


def parse_arg(text: str) -> dict[str, Any]:
    """The ``--session-options`` JSON the runner is given (empty: the runtime's defaults)."""
    if not text:
        return {}
    data = json.loads(text)
    preset_from(str(data.get("name", "")), data)  # the same checks as on the gate's side
    return {k: v for k, v in data.items() if k in KEYS}
