"""One cached virtual environment per (package, version): the serving environment of a target.

An environment holds numpy and one onnxruntime flavour, nothing else (two flavours overwrite each
other in one environment). It is created with uv when uv is available, else with venv + pip, under a
cache directory the caller passes in, and reused by every later target that needs the same package
and version. Creation is serialised by a lock file, so parallel targets never build the same
environment twice; an environment counts as ready only once its marker file is written.
"""

from __future__ import annotations

import dataclasses
import fcntl
import re
import shutil
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from ci_onnx import matrix
from ci_onnx.contracts import proc
from ci_onnx.contracts.errors import EnvironmentProblem

READY = "onnx-gate-env.txt"
INSTALL_TIMEOUT_S = 1200.0
_NO_VERSION = re.compile(
    r"no version of|No matching distribution|Could not find a version|not found in the package registry",
    re.IGNORECASE,
)


@dataclasses.dataclass(frozen=True)
class RuntimeEnv:
    package: str
    version: str
    path: Path

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"


def find_uv() -> str | None:
    """The uv binary: the one the ``uv`` Python package ships, else one on PATH."""
    try:
        import uv  # type: ignore[import-not-found,unused-ignore]

        found: str = uv.find_uv_bin()
        return found
    except (ImportError, FileNotFoundError):
        return shutil.which("uv")


def requirements(package: str, version: str, numpy_spec: str | None = None) -> list[str]:
    """What the environment installs: the flavour pinned, and numpy within what its wheels were built
    for (``numpy_spec``; None: onnxruntime's runtime table says, by the release)."""
    if numpy_spec is None:
        numpy_spec = matrix.caps_for(version).numpy
    return [f"{package}=={version}", f"numpy{numpy_spec}"]


def env_dir(cache_dir: Path, package: str, version: str) -> Path:
    tag = f"py{sys.version_info.major}{sys.version_info.minor}"
    return cache_dir / "envs" / f"{package}-{version}-{tag}"


def uv_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` for uv, with pip's index settings carried over.

    The plan resolves versions through pip's index; uv reads its own variables, not pip's, so an index
    given as PIP_INDEX_URL / PIP_EXTRA_INDEX_URL would be ignored and uv would ask PyPI instead. They
    become UV_INDEX_URL / UV_EXTRA_INDEX_URL (unless uv's own are set), with pip's way of choosing
    among indexes (the best match across all of them). An index set only in a pip.conf file is not
    seen here: set the variables, or UV_INDEX_URL, for uv too.
    """
    out = dict(environ)
    carried = False
    for pip_name, uv_name in (
        ("PIP_INDEX_URL", "UV_INDEX_URL"),
        ("PIP_EXTRA_INDEX_URL", "UV_EXTRA_INDEX_URL"),
    ):
        if environ.get(pip_name) and uv_name not in environ:
            out[uv_name] = environ[pip_name]
            carried = True
    if carried:
        out.setdefault("UV_INDEX_STRATEGY", "unsafe-best-match")
    return out


def ensure(
    package: str,
    version: str,
    cache_dir: Path,
    *,
    uv: str | None = None,
    base_python: str | None = None,
    what: str = "",
    environ: Mapping[str, str] | None = None,
    numpy_spec: str | None = None,
) -> RuntimeEnv:
    """Create ``package==version`` (+ numpy) in its own environment, or reuse the cached one.

    ``environ`` is the process environment for the installer (None: this process's); ``numpy_spec``
    the numpy requirement, for a package that is not onnxruntime (None: the runtime table's)."""
    env = RuntimeEnv(package, version, env_dir(cache_dir, package, version))
    marker = env.path / READY
    if marker.is_file() and env.python.exists():
        return env
    env.path.parent.mkdir(parents=True, exist_ok=True)
    with _locked(env.path.parent / f"{env.path.name}.lock"):
        if marker.is_file() and env.python.exists():
            return env  # built by another process while we waited for the lock
        if env.path.exists():
            shutil.rmtree(env.path)  # a half-built environment from an interrupted run
        reqs = requirements(package, version, numpy_spec)
        _create(env, uv, base_python or sys.executable, what or env.requirement, environ, reqs)
        marker.write_text(env.requirement + "\n")
    return env


def _create(
    env: RuntimeEnv,
    uv: str | None,
    base_python: str,
    what: str,
    environ: Mapping[str, str] | None,
    reqs: list[str],
) -> None:
    try:
        if uv:
            uv_env = uv_environment(environ) if environ is not None else None
            proc.run(
                [uv, "venv", "-q", "--python", base_python, env.path],
                timeout=120,
                check=True,
                what=what,
                env=uv_env,
            )
            # Compiled now, once: the runner runs with PYTHONDONTWRITEBYTECODE, so without .pyc files
            # every verify would compile numpy's and onnxruntime's sources again (pip compiles anyway).
            done = proc.run(
                [uv, "pip", "install", "-q", "--compile-bytecode", "--python", env.python, *reqs],
                timeout=INSTALL_TIMEOUT_S,
                env=uv_env,
            )
        else:
            proc.run([base_python, "-m", "venv", env.path], timeout=300, check=True, what=what, env=environ)
            done = proc.run(
                [env.python, "-m", "pip", "install", "-q", "--disable-pip-version-check", *reqs],
                timeout=INSTALL_TIMEOUT_S,
                env=environ,
            )
    except EnvironmentProblem:
        shutil.rmtree(env.path, ignore_errors=True)
        raise
    if done.ok:
        return
    shutil.rmtree(env.path, ignore_errors=True)
    output = done.stderr + done.stdout
    if _NO_VERSION.search(output):
        raise EnvironmentProblem(
            f"{what}: {env.requirement} is not on the package index for Python "
            f"{sys.version_info.major}.{sys.version_info.minor}; pick a released version (`onnx-gate plan` "
            "resolves specs such as 1.24.* or latest)"
        )
    raise EnvironmentProblem(f"{what}: installing {' '.join(reqs)} failed, {done.describe_failure()}")


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
