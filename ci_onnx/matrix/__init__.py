"""The declared data of the matrix: what each runtime release loads, and where each provider lives.

The data is in the TOML files beside this module; this module only reads and types it.
"""

from __future__ import annotations

import dataclasses
import functools
import tomllib
from pathlib import Path

from packaging.version import InvalidVersion, Version

_HERE = Path(__file__).parent


@dataclasses.dataclass(frozen=True)
class RuntimeCaps:
    minor: str
    max_opset: int
    max_ir: int
    numpy: str = ""

    def cannot_load(self, opset: int) -> str:
        """Why a model at ``opset`` cannot load on this release, or '' when it can."""
        if opset > self.max_opset:
            return (
                f"onnxruntime {self.minor} loads opset <= {self.max_opset}; opset {opset} needs "
                f"onnxruntime >= {first_release_loading(opset)}"
            )
        return ""


@dataclasses.dataclass(frozen=True)
class ProviderInfo:
    name: str
    ep: str
    package: str
    runs_on: tuple[str, ...]
    container: bool
    accelerator: bool
    min_runtime: str = ""
    platforms: tuple[str, ...] = ()


def minor_of(version: str) -> str:
    parts = version.split(".")
    return ".".join(parts[:2])


def version_key(version: str) -> Version:
    """PEP 440 ordering (1.24.0.dev20260101 < 1.24.0 < 1.24.1); an unparsable string sorts first."""
    try:
        return Version(version)
    except InvalidVersion:
        return Version("0")


@functools.cache
def runtimes() -> dict[str, RuntimeCaps]:
    data = tomllib.loads((_HERE / "runtimes.toml").read_text())
    return {minor: RuntimeCaps(minor=minor, **row) for minor, row in data["runtimes"].items()}


@functools.cache
def providers() -> dict[str, ProviderInfo]:
    data = tomllib.loads((_HERE / "providers.toml").read_text())
    out = {}
    for name, row in data["providers"].items():
        row = {k: tuple(v) if isinstance(v, list) else v for k, v in row.items()}
        out[name] = ProviderInfo(name=name, **row)
    return out


def caps_for(version: str) -> RuntimeCaps:
    """The capabilities of a release; one newer than the table loads what the newest row loads."""
    table = runtimes()
    minor = minor_of(version)
    if minor in table:
        return table[minor]
    newest = max(table, key=version_key)
    oldest = min(table, key=version_key)
    if version_key(minor) > version_key(newest):
        return dataclasses.replace(table[newest], minor=minor)
    return dataclasses.replace(table[oldest], minor=minor)


def first_release_loading(opset: int) -> str:
    candidates = [m for m, caps in runtimes().items() if caps.max_opset >= opset]
    return min(candidates, key=version_key) if candidates else "(none known yet)"
