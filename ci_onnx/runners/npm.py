"""One npm install per package release under the cache, shared by the runner kinds that need npm
(node, web, native): locked against a parallel run, marked when complete, checked for the version
npm really installed, and removed again when anything goes wrong."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from ci_onnx.contracts import proc
from ci_onnx.contracts.errors import EnvironmentProblem
from ci_onnx.host import envs

READY = envs.READY
"""The marker of a complete install, the Python environments' own (so a run counts both alike)."""
INSTALL_TIMEOUT_S = 900.0
QUIET = ("--no-audit", "--no-fund", "--ignore-scripts")
_NO_VERSION = re.compile(r"ETARGET|No matching version|E404|is not in this registry", re.IGNORECASE)


class NoSuchRelease(EnvironmentProblem):
    """The registry has no such release of the package (a one-line error the caller may reword)."""


def install(
    path: Path,
    package: str,
    version: str,
    *,
    npm: str,
    environ: Mapping[str, str],
    what: str,
    extra: Sequence[str] = (),
) -> Path:
    """``package@version`` (and the ``extra`` specs) installed at ``path`` once; the package's folder.

    ``npm install --ignore-scripts``: onnxruntime-node's postinstall only downloads CUDA binaries."""
    module = path / "node_modules" / package
    specs = [f"{package}@{version}", *extra]
    if (path / READY).is_file():
        return module
    path.parent.mkdir(parents=True, exist_ok=True)
    with envs._locked(path.parent / f"{path.name}.lock"):
        if (path / READY).is_file():
            return module  # installed by another process while we waited for the lock
        if path.exists():
            shutil.rmtree(path)  # a half-finished install from an interrupted run
        with tempfile.TemporaryDirectory(prefix="onnx-gate-npm-") as nowhere:  # no repository's .npmrc
            done = proc.run(
                [
                    npm,
                    "install",
                    "--prefix",
                    path.resolve(),
                    *specs,
                    "--no-audit",
                    "--no-fund",
                    "--ignore-scripts",
                ],
                timeout=INSTALL_TIMEOUT_S,
                env=environ,
                what=what,
                cwd=Path(nowhere),
            )
        if not done.ok:
            shutil.rmtree(path, ignore_errors=True)
            if _NO_VERSION.search(done.stderr + done.stdout):
                raise NoSuchRelease(
                    f"{what}: {package} has no release {version} on the npm registry; pick a released "
                    f"version (`npm view {package} versions`)"
                )
            raise EnvironmentProblem(f"{what}: npm install failed, {done.describe_failure()}")
        installed = module / "package.json"
        got = json.loads(installed.read_text()).get("version") if installed.is_file() else None
        if got != version:
            shutil.rmtree(path, ignore_errors=True)
            raise EnvironmentProblem(f"{what}: npm installed {got or 'nothing'}, not {version}")
        (path / READY).write_text(" ".join(specs) + "\n")
    return module
