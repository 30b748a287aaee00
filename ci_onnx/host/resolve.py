"""Resolve runtime specs to released versions.

Specs: an exact release (``1.20.1``, checked against the index: one the index lacks is a config
error naming the nearest releases; taken as written when the index cannot be listed), a wildcard
(``1.24.*`` or ``1.24``: the newest matching release), ``latest``, ``latest-N`` (the N newest releases) and
``nightly`` (the newest pre-release on the extra index that the config names).

Versions come from the package index that pip is configured with (pip.conf, PIP_INDEX_URL,
PIP_EXTRA_INDEX_URL), through pip itself: no index host is written in onnx-gate. A package named
``npm:NAME`` (a runner kind whose releases ship on npm) is asked of npm the same way (``npm view``),
and ``maven:GROUP:ARTIFACT`` (the android kind's AAR) of a Maven repository, by its
``maven-metadata.xml`` (Maven Central unless the caller names a mirror).
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import tempfile
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from packaging.version import InvalidVersion, Version

from ci_onnx.contracts import proc
from ci_onnx.contracts.errors import ConfigError, EnvironmentProblem
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
            f"targets.runtimes: {spec!r} matches no release of {display(package)} {registry(package)} "
            f"(newest: {known})"
        )
    ordered = sorted(candidates, key=version_key, reverse=True)
    return ordered[: int(latest_n.group(1))] if latest_n else ordered[:1]


def check_exact(spec: str, package: str, resolver: Resolver, where: str = "targets.runtimes") -> None:
    """Raise NoRelease when the index lists releases of ``package`` but not ``spec``."""
    missing = absent(spec, package, resolver)
    if missing:
        raise NoRelease(f"{where}: {missing}; pick one of those, or exclude the cell with targets.exclude")


def absent(spec: str, package: str, resolver: Resolver) -> str:
    """Why the exact release ``spec`` of ``package`` is not there, naming the nearest releases that
    are; "" when it is there, or when the registry cannot be listed (verify says so then)."""
    try:
        available = resolver.versions(package)
    except EnvironmentProblem:
        return ""
    if spec in available or not available:
        return ""
    key = version_key(spec)
    below = [v for v in sorted(available, key=version_key) if version_key(v) < key][-2:]
    above = [v for v in sorted(available, key=version_key) if version_key(v) > key][:2]
    nearest = ", ".join(below + above)
    return f"{display(package)} has no release {spec} {registry(package)} (nearest: {nearest})"


def display(package: str) -> str:
    """The package as a person names it: without the registry prefix of :meth:`RunnerInfo.index_name`."""
    return package.removeprefix(NPM).removeprefix(MAVEN)


def registry(package: str) -> str:
    """Where the releases of ``package`` are listed, for messages: "on Maven", "on npm" …"""
    if package.startswith(MAVEN):
        return "on Maven"
    return "on the npm registry" if package.startswith(NPM) else "on the configured package index"


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
        maven_url: str = "",
    ) -> None:
        self._python = python
        self._env = env
        self._extra = tuple(extra_index_urls)
        self._maven = maven_url or MAVEN_CENTRAL
        self._cache: dict[tuple[str, bool], list[str]] = {}

    def versions(self, package: str, *, pre: bool = False) -> list[str]:
        if (package, pre) not in self._cache:
            found = None
            if package.startswith(NPM):
                found = _ask_npm(package.removeprefix(NPM), self._env)
            elif package.startswith(MAVEN):
                found = ask_maven(package.removeprefix(MAVEN), self._maven)
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


MAVEN = "maven:"
"""The prefix of a package that ships on a Maven repository (runners.toml's registry = "maven"),
named ``GROUP:ARTIFACT``."""
MAVEN_CENTRAL = "https://repo1.maven.org/maven2"
MAVEN_TIMEOUT_S = 60.0


def maven_metadata_url(coordinate: str, base_url: str = MAVEN_CENTRAL) -> str:
    """``group:artifact`` → its maven-metadata.xml in the repository at ``base_url``."""
    group, _, artifact = coordinate.partition(":")
    return f"{base_url.rstrip('/')}/{group.replace('.', '/')}/{artifact}/maven-metadata.xml"


def maven_versions(xml: bytes, where: str) -> list[str]:
    """The releases a maven-metadata.xml lists (``versioning/versions/version``), as written.

    ``versioning/release`` is not read: it names the release deployed last, which after a patch of an
    older line (1.19.3 deployed after 1.20.0) is not the newest.
    """
    try:
        root = ET.fromstring(xml)
    except ET.ParseError as exc:
        raise EnvironmentProblem(f"{where}: not Maven repository metadata ({exc})") from None
    found = (v.text or "" for v in root.iterfind("./versioning/versions/version"))
    return [v.strip() for v in found if v.strip()]


def ask_maven(coordinate: str, base_url: str = MAVEN_CENTRAL) -> list[str]:
    """Every release of ``group:artifact`` that the Maven repository at ``base_url`` lists."""
    url = maven_metadata_url(coordinate, base_url)
    try:
        with urllib.request.urlopen(url, timeout=MAVEN_TIMEOUT_S) as response:
            xml = response.read()
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = f"HTTP {exc.code} {exc.reason}" if isinstance(exc, urllib.error.HTTPError) else exc
        reason = getattr(reason, "reason", None) or reason
        raise EnvironmentProblem(
            f"could not list the releases of {coordinate} from {url} ({reason}); set ONNX_GATE_MAVEN to a "
            "Maven mirror that can be reached, or pin exact releases in targets.runtimes"
        ) from None
    return maven_versions(xml, url)
