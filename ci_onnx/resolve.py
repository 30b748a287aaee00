"""Resolve runtime specs (``1.20.1``, ``1.24.*``, ``1.24``, ``latest``) to released versions.

Versions come from the package index that pip is configured with (pip.conf, PIP_INDEX_URL,
PIP_EXTRA_INDEX_URL), through pip itself: no index host is written in onnx-gate.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from typing import Protocol

from ci_onnx import proc
from ci_onnx.errors import ConfigError, EnvironmentProblem
from ci_onnx.matrix import version_key

_EXACT = re.compile(r"^\d+\.\d+\.\d+$")
_RELEASE = re.compile(r"^\d+(\.\d+)*$")


class NoRelease(ConfigError):
    """A spec that matches no release of one package (it may match another provider's package)."""


class Resolver(Protocol):
    def versions(self, package: str) -> list[str]:
        """Every final release of ``package`` the index offers for this Python, newest first."""
        ...


def is_exact(spec: str) -> bool:
    return bool(_EXACT.match(spec))


def resolve(spec: str, package: str, resolver: Resolver) -> str:
    """The release ``spec`` names for ``package``. Exact versions are taken as written (no index)."""
    if is_exact(spec):
        return spec
    available = resolver.versions(package)
    if spec == "latest":
        candidates = available
    else:
        prefix = spec.removesuffix(".*").removesuffix("*").rstrip(".") + "."
        candidates = [v for v in available if v.startswith(prefix)]
    if not candidates:
        known = ", ".join(available[:8]) or "none"
        raise NoRelease(
            f"targets.runtimes: {spec!r} matches no release of {package} on the configured package index "
            f"(newest: {known})"
        )
    return max(candidates, key=version_key)


class PipIndex:
    """Asks ``pip index versions`` (the configured index) once per package, and remembers."""

    def __init__(self, python: str = sys.executable, env: Mapping[str, str] | None = None) -> None:
        self._python = python
        self._env = env
        self._cache: dict[str, list[str]] = {}

    def versions(self, package: str) -> list[str]:
        if package not in self._cache:
            self._cache[package] = self._ask(package)
        return self._cache[package]

    def _ask(self, package: str) -> list[str]:
        done = proc.run(
            [self._python, "-m", "pip", "index", "versions", package, "--disable-pip-version-check"],
            timeout=120,
            env=self._env,
        )
        match = re.search(r"^Available versions:\s*(.+)$", done.stdout, re.MULTILINE)
        if not done.ok or not match:
            raise EnvironmentProblem(
                f"could not list the releases of {package} from the configured package index "
                f"({done.describe_failure() if not done.ok else 'pip printed no versions'}); check pip's "
                "index settings (pip config list), or pin exact versions in targets.runtimes"
            )
        found = [v.strip() for v in match.group(1).split(",")]
        return sorted((v for v in found if _RELEASE.match(v)), key=version_key, reverse=True)
