"""The one way onnx-gate starts an external process: an argument list, a timeout, output captured.

No ``shell=True`` anywhere. A crash is reported by signal name, a hang by its timeout, so a runtime
that segfaults or hangs becomes a value the caller can record rather than an exception that escapes.

Every child gets :func:`child_environment`: an allow-list of variable names, with anything that looks
like a credential removed even from those. The children run code from the pull request (the model
factory) and third-party runtimes; no token of any name reaches them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from ci_onnx.errors import EnvironmentProblem

ALLOWED_NAMES = frozenset(
    {
        "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TERM", "COLUMNS",
        "NO_COLOR", "FORCE_COLOR", "TMPDIR", "TEMP", "TMP", "PWD", "SOURCE_DATE_EPOCH",
        "LD_LIBRARY_PATH", "DYLD_LIBRARY_PATH", "DYLD_FALLBACK_LIBRARY_PATH", "VK_ICD_FILENAMES",
        "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
        "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy",
        "VIRTUAL_ENV", "CONDA_PREFIX", "CI", "GITHUB_ACTIONS", "RUNNER_OS", "RUNNER_ARCH", "RUNNER_TEMP",
        "RUNNER_TOOL_CACHE", "SYSTEMROOT", "SYSTEMDRIVE", "WINDIR", "COMSPEC", "PATHEXT", "APPDATA",
        "LOCALAPPDATA", "USERPROFILE", "PROGRAMDATA", "PROGRAMFILES", "NUMBER_OF_PROCESSORS",
        "PROCESSOR_ARCHITECTURE",
    }
)  # fmt: skip
"""Variables a child may see: the system's basics, proxies and certificates, the CI's kind of machine."""
ALLOWED_PREFIXES = (
    "LC_", "PYTHON", "PIP_", "UV_", "VIRTUALENV_", "OMP_", "MKL_", "KMP_", "OPENBLAS_", "CUDA_", "NVIDIA_",
    "CUDNN_", "TORCH", "HF_", "TRANSFORMERS_", "ORT_", "ONNX", "OPENVINO", "XDG_", "GIT_", "BENCH_",
    "NPM_CONFIG_", "ANDROID_",
)  # fmt: skip
SECRET_WORDS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "KEY", "CREDENTIAL", "COOKIE")
SECRET_PARTS = ("AUTH", "PAT", "PASS")
"""Whole words of a name (``GH_PAT``, ``NPM_AUTH``), not parts of other words (``PATH``, ``AUTHOR``)."""
"""A name holding one of these is dropped even when its prefix is allowed (HF_TOKEN, PIP_PASSWORD)."""
ALLOWED_SECRET_LOOKING = frozenset({"PIP_KEYRING_PROVIDER", "UV_KEYRING_PROVIDER"})
"""Names that hold one of the words above and no secret."""


def is_secret_name(name: str) -> bool:
    upper = name.upper()
    if upper in ALLOWED_SECRET_LOOKING:
        return False
    words = upper.replace("-", "_").split("_")
    return any(w in upper for w in SECRET_WORDS) or any(p in words for p in SECRET_PARTS)


def child_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment every child process gets: allow-listed names, no credential of any name.

    The one rule for run, export, verify and nightly (they all start children through :func:`run`)."""
    return {
        k: v
        for k, v in environ.items()
        if (k in ALLOWED_NAMES or k.upper().startswith(ALLOWED_PREFIXES)) and not is_secret_name(k)
    }


@dataclasses.dataclass(frozen=True)
class Completed:
    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def describe_failure(self) -> str:
        """'killed by SIGSEGV', 'timed out after 300 s', 'exit code 1', with the last stderr line."""
        if self.timed_out:
            what = f"timed out after {self.duration_s:.0f} s"
        elif self.returncode < 0:
            try:
                what = f"killed by {signal.Signals(-self.returncode).name}"
            except ValueError:
                what = f"killed by signal {-self.returncode}"
            if self.returncode == -signal.SIGKILL:
                what += " (out of memory, or killed from outside)"
        else:
            what = f"exit code {self.returncode}"
        tail = last_line(self.stderr)
        return f"{what}: {tail}" if tail else what


def last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:400] if lines else ""


def spawn(
    argv: Sequence[str],
    env: Mapping[str, str],
    what: str,
    *,
    cwd: Path | None = None,
    stdin: int = subprocess.DEVNULL,
) -> subprocess.Popen[str]:
    """A child with the allow-listed environment of ``env``, text pipes for stdout and stderr, in a
    process group of its own (so a timeout can kill all of it); one that cannot start is one line."""
    if _ENDING.is_set():
        raise EnvironmentProblem(f"{what}: not started, the command is being interrupted")
    main = threading.current_thread() is threading.main_thread()
    if main:
        _MAIN.spawning = True  # a Ctrl-C now waits until the child is registered (interruptible)
    try:
        child = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=child_environment(env),
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            start_new_session=True,
        )
    except OSError as exc:
        _interrupt_if_pending(main)
        raise EnvironmentProblem(f"{what}: cannot start {argv[0]} ({exc.strerror})") from None
    finally:
        if main:
            _MAIN.spawning = False
    with _LIVE_LOCK:
        _LIVE.difference_update([c for c in _LIVE if c.returncode is not None])  # waited for already
        ending = _ENDING.is_set()  # an interrupt came while it started: end_children missed it
        if not ending:
            _LIVE.add(child)
    if ending:
        _kill_group(child)
    _interrupt_if_pending(main)
    if ending:
        raise EnvironmentProblem(f"{what}: ended as it started, the command is being interrupted")
    return child


@dataclasses.dataclass
class _MainThread:
    spawning: bool = False
    """Inside ``Popen`` in the main thread: its child may run before it can be registered."""
    interrupted: bool = False
    """A Ctrl-C came meanwhile; :func:`spawn` raises it once the child is registered."""


_MAIN = _MainThread()


def _interrupt_if_pending(main: bool) -> None:
    if main and _MAIN.interrupted:
        _MAIN.interrupted = False
        end_children()
        raise KeyboardInterrupt


_LIVE: set[subprocess.Popen[str]] = set()
_LIVE_LOCK = threading.RLock()  # re-entrant: the SIGINT handler may run while its thread holds it
"""Every child :func:`spawn` started. Each runs in a session of its own, so a Ctrl-C at the terminal
(SIGINT to the foreground process group) never reaches it: :func:`end_children` does."""


_ENDING = threading.Event()
"""Set while an interrupt ends the children: threads still at work start no new ones."""


def end_children() -> int:
    """Kill the process group of every child still running, and start no new one until
    :func:`interruptible` returns; returns how many were running."""
    _ENDING.set()
    with _LIVE_LOCK:
        live = [c for c in _LIVE if c.poll() is None]
        _LIVE.clear()
    for child in live:
        _kill_group(child)
    return len(live)


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """Ctrl-C ends the children at once, then raises KeyboardInterrupt where the main thread is.

    Without it a KeyboardInterrupt would wait for the threads that wait on children (an executor's
    shutdown joins them), and those children, in sessions of their own, never see the terminal's
    SIGINT. A SIGINT handler is the main thread's; elsewhere, or where SIGINT is ignored (a job run
    with nohup), nothing changes."""
    previous = signal.getsignal(signal.SIGINT)
    install = threading.current_thread() is threading.main_thread() and previous is signal.default_int_handler

    def interrupted(signum: int, frame: object) -> None:
        if _MAIN.spawning:  # its child is not registered yet: spawn raises this once it is
            _ENDING.set()
            _MAIN.interrupted = True
            return
        end_children()
        raise KeyboardInterrupt

    if install:
        signal.signal(signal.SIGINT, interrupted)
    try:
        yield
    except KeyboardInterrupt:
        end_children()
        raise
    finally:
        if install:
            signal.signal(signal.SIGINT, previous)
        _ENDING.clear()


def run(
    args: Sequence[str | os.PathLike[str]],
    *,
    timeout: float,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    check: bool = False,
    what: str = "",
) -> Completed:
    """Run ``args``; with ``check``, a failure raises EnvironmentProblem naming ``what``.

    ``env`` (default: this process's) is filtered through :func:`child_environment`."""
    argv = tuple(os.fspath(a) for a in args)
    if not (isinstance(timeout, (int, float)) and math.isfinite(timeout) and 0 < timeout <= MAX_TIMEOUT_S):
        raise EnvironmentProblem(
            f"{what or argv[0]}: a timeout of {timeout!r} s is not between 0 and {MAX_TIMEOUT_S:.0f} s"
        )
    start = time.monotonic()
    proc = spawn(argv, env if env is not None else os.environ, what or argv[0], cwd=cwd)
    try:
        out, err = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, err = _drain(proc)
        timed_out = True
    except BaseException:  # an interrupt: the child is in its own session, so end it here
        _kill_group(proc)
        raise
    finally:
        with _LIVE_LOCK:
            _LIVE.discard(proc)
    done = Completed(argv, proc.returncode, out, err, time.monotonic() - start, timed_out)
    if check and not done.ok:
        raise EnvironmentProblem(f"{what or argv[0]} failed, {done.describe_failure()}")
    return done


MAX_TIMEOUT_S = 7 * 24 * 3600.0
DRAIN_S = 2.0
"""After a kill, how long to wait for the pipes: a grandchild that left the process group (setsid)
and holds them must not keep the caller waiting past its timeout."""


def _drain(proc: subprocess.Popen[str]) -> tuple[str, str]:
    try:
        return proc.communicate(timeout=DRAIN_S)
    except subprocess.TimeoutExpired as exc:
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        proc.wait()
        return _text(exc.stdout), _text(exc.stderr)


def _text(data: str | bytes | None) -> str:
    if data is None:
        return ""
    return data.decode(errors="replace") if isinstance(data, bytes) else data


def _kill_group(proc: subprocess.Popen[str]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
