"""Session-options presets: named SessionOptions settings, a matrix axis (``targets.session_options``).

This is the environment's side: what a preset may say (checked here as on the host), and setting it
on an onnxruntime SessionOptions. The observer receives the resolved preset as JSON
(``--session-options``); which presets exist and which kinds apply them is the host's side,
ci_onnx.runners.session.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

LEVELS = {
    "disable": "ORT_DISABLE_ALL",
    "basic": "ORT_ENABLE_BASIC",
    "extended": "ORT_ENABLE_EXTENDED",
    "all": "ORT_ENABLE_ALL",
}
MODES = {"sequential": "ORT_SEQUENTIAL", "parallel": "ORT_PARALLEL"}
KEYS = (
    "graph_optimization_level",
    "intra_op_threads",
    "inter_op_threads",
    "execution_mode",
    "mem_pattern",
    "denormal_as_zero",
)
CONFIG_ENTRIES = {"denormal_as_zero": "session.set_denormal_as_zero"}
"""Preset keys that are session config entries (``add_session_config_entry``), by the entry's key."""
PROCESS_WIDE = ("denormal_as_zero",)
"""Preset keys whose setting outlives the session in its process: onnxruntime sets flush-to-zero on
the thread that creates the first session and keeps it, so a cell with one needs a process of its own
(a batch child's first session would decide it for every cell after)."""


@dataclasses.dataclass(frozen=True)
class Preset:
    """One named preset; a setting left as None keeps the runtime's default."""

    name: str
    graph_optimization_level: str | None = None
    intra_op_threads: int | None = None
    inter_op_threads: int | None = None
    execution_mode: str | None = None
    mem_pattern: bool | None = None
    denormal_as_zero: bool | None = None
    """Flush denormals to zero (``session.set_denormal_as_zero``): arithmetic some deployments choose."""

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
    for key in ("mem_pattern", "denormal_as_zero"):
        flag = row.get(key)
        if flag is not None and not isinstance(flag, bool):
            raise PresetError(f"{key} {flag!r} is not true or false")
    return Preset(name=name, **{k: row[k] for k in KEYS if k in row})


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
    for key, value in config_entries(settings).items():
        so.add_session_config_entry(key, value)
    return so


def config_entries(settings: Mapping[str, Any]) -> dict[str, str]:
    """The session config entries a preset's settings set (key → "0"/"1")."""
    return {
        entry: "1" if settings[key] else "0"
        for key, entry in CONFIG_ENTRIES.items()
        if settings.get(key) is not None
    }


def parse_arg(text: str) -> dict[str, Any]:
    """The ``--session-options`` JSON the runner is given (empty: the runtime's defaults)."""
    if not text:
        return {}
    data = json.loads(text)
    preset_from(str(data.get("name", "")), data)  # the same checks as on the gate's side
    return {k: v for k, v in data.items() if k in KEYS}
