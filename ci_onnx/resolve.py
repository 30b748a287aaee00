"""Resolve runtime specs to released versions.

Specs: an exact release (``1.20.1``, checked against the index: one the index lacks is a config
error naming the nearest releases; taken as written when the index cannot be listed), a wildcard
(``1.24.*`` or ``1.24``: the newest matching release), ``latest``, ``latest-N`` (the N newest releases) and
``nightly`` (the newest pre-release on the extra index that the config names).

Versions come from the package index that pip is configured with (pip.conf, PIP_INDEX_URL,
PIP_EXTRA_INDEX_URL), through pip itself: no index host is written in onnx-gate. A package named
``npm:NAME`` (a runner kind whose releases ship on npm) is asked of npm the same way (``npm view``).
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from packaging.version import InvalidVersion, Version

from ci_onnx import proc
from ci_onnx.errors import ConfigError, EnvironmentProblem
from ci_onnx.matrix import version_key

_EXACT = re.compile(r"^\d+\.\d+\.\d+$")
_LATEST_N = re.compile(r"^latest-(\d+)$")


class NoRelease(ConfigError):
    """A spec that matches no release of one package (it may match another provider's package)."""


class Resolver(Protocol):
    def versions(self, package: str, *, pre: bool = False) -> list[str]:
        """Every release of ``package`` the index offers for this Python, newest first; with ``pre``,
        pre-releases too (from the nightly index as well, when one is configured)."""
        ...


def is_exact(spec: str) -> bool:
    return bool(_EXACT.match(spec))


def resolve(spec: str, package: str, resolver: Resolver) -> str:
    """The one release a single-valued spec names (everything but ``latest-N``)."""
    return resolve_all(spec, package, resolver)[0]


def resolve_all(spec: str, package: str, resolver: Resolver) -> list[str]:
    """The releases ``spec`` names for ``package``, newest first."""
    if is_exact(spec):
        return [spec]
    if spec == "nightly":
        pre = [v for v in resolver.versions(package, pre=True) if _is_pre(v)]
        if not pre:
            raise NoRelease(
                f"targets.runtimes: 'nightly' found no pre-release of {package}; check targets.nightly_index"
            )
        return [max(pre, key=version_key)]
    available = resolver.versions(package)
    latest_n = _LATEST_N.match(spec)
    if spec == "latest" or latest_n:
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
    ordered = sorted(candidates, key=version_key, reverse=True)
    return ordered[: int(latest_n.group(1))] if latest_n else ordered[:1]


def check_exact(spec: str, package: str, resolver: Resolver, where: str = "targets.runtimes") -> None:
    """Raise NoRelease when the index lists releases of ``package`` but not ``spec``."""
    try:
        available = resolver.versions(package)
    except EnvironmentProblem:
        return  # no index to ask: verify says so if the release is missing, as before
    if spec in available or not available:
        return
    key = version_key(spec)
    below = [v for v in sorted(available, key=version_key) if version_key(v) < key][-2:]
    above = [v for v in sorted(available, key=version_key) if version_key(v) > key][:2]
    raise NoRelease(
        f"{where}: {package} has no release {spec} on the configured package index (nearest: "
        f"{', '.join(below + above)}); pick one of those, or exclude the cell with targets.exclude"
    )


def releases_between(good: str, bad: str, package: str, resolver: Resolver) -> list[str]:
    """The final releases after ``good`` up to and including ``bad``, oldest first (for bisecting)."""
    lo, hi = version_key(good), version_key(bad)
    inside = [v for v in resolver.versions(package) if lo < version_key(v) <= hi]
    return sorted(inside, key=version_key)


def _is_pre(version: str) -> bool:
    try:
        v = Version(version)
    except InvalidVersion:
        return False
    return v.is_prerelease or v.is_devrelease


def _is_final(version: str) -> bool:
    try:
        v = Version(version)
    except InvalidVersion:
        return False
    return not (v.is_prerelease or v.is_devrelease or v.local)


class PipIndex:
    """Asks ``pip index versions`` (the configured index) once per package, and remembers.

    ``extra_index_urls`` are added only for pre-release look-ups (the nightly feed), so a nightly index
    can never shadow a final release.
    """

    def __init__(
        self,
        python: str = sys.executable,
        env: Mapping[str, str] | None = None,
        extra_index_urls: Sequence[str] = (),
    ) -> None:
        self._python = python
        self._env = env
        self._extra = tuple(extra_index_urls)
        self._cache: dict[tuple[str, bool], list[str]] = {}

    def versions(self, package: str, *, pre: bool = False) -> list[str]:
        if (package, pre) not in self._cache:
            found = _ask_npm(package.removeprefix(NPM), self._env) if package.startswith(NPM) else None
            found = self._ask(package, pre) if found is None else found
            keep = found if pre else [v for v in found if _is_final(v)]
            self._cache[package, pre] = sorted(keep, key=version_key, reverse=True)
        return self._cache[package, pre]

    def _ask(self, package: str, pre: bool) -> list[str]:
        args = [self._python, "-m", "pip", "index", "versions", package, "--disable-pip-version-check"]
        if pre:
            args.append("--pre")
            for url in self._extra:
                args += ["--extra-index-url", url]
        done = proc.run(args, timeout=120, env=self._env)
        match = re.search(r"^Available versions:\s*(.+)$", done.stdout, re.MULTILINE)
        if not done.ok or not match:
            raise EnvironmentProblem(
                f"could not list the releases of {package} from the configured package index "
                f"({done.describe_failure() if not done.ok else 'pip printed no versions'}); check pip's "
                "index settings (pip config list), or pin exact versions in targets.runtimes"
            )
        return [v.strip() for v in match.group(1).split(",") if v.strip()]


NPM = "npm:"
"""The prefix of a package that ships on npm (runners.toml's registry = "npm")."""


def _ask_npm(package: str, env: Mapping[str, str] | None) -> list[str]:
    npm = shutil.which("npm", path=(env or {}).get("PATH")) if env is not None else shutil.which("npm")
    if npm is None:
        raise EnvironmentProblem(
            f"could not list the releases of {package} on npm: no `npm` on PATH; install Node.js, or pin "
            "exact versions in targets.runtimes"
        )
    with tempfile.TemporaryDirectory(prefix="onnx-gate-npm-") as nowhere:  # no repository's .npmrc
        done = proc.run([npm, "view", package, "versions", "--json"], timeout=120, env=env, cwd=Path(nowhere))
    try:
        found = json.loads(done.stdout) if done.ok else None
    except ValueError:
        found = None
    if not isinstance(found, list):
        why = done.describe_failure() if not done.ok else "npm printed no versions"
        raise EnvironmentProblem(
            f"could not list the releases of {package} on npm ({why}); "
            "check npm's registry settings, or pin exact versions in targets.runtimes"
        )
    return [str(v) for v in found]
