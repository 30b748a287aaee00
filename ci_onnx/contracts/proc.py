"""The one way onnx-gate starts an external process: an argument list, a timeout, output captured.

No ``shell=True`` anywhere. A crash is reported by signal name, a hang by its timeout, so a runtime
that segfaults or hangs becomes a value the caller can record rather than an exception that escapes.

Children die with their parent: every child starts in a process group of its own (so a timeout kills
all of it) and is known here while it lives; :func:`end_children` kills every such group and runs the
clean-ups registered with :func:`cleanup` (a browser that left its group), and the CLI's edge calls it
on SIGTERM, SIGHUP and SIGINT (:func:`end_children_on_signals`). After that no child starts.

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
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import FrameType

from ci_onnx.contracts.errors import EnvironmentProblem

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
    with _LOCK, _spawning():
        if _STOPPING.is_set():
            raise EnvironmentProblem(f"{what}: not started, onnx-gate is stopping on a signal")
        for finished in [c for c in _LIVE if c.poll() is not None]:
            _LIVE.discard(finished)
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
            raise EnvironmentProblem(f"{what}: cannot start {argv[0]} ({exc.strerror})") from None
        _LIVE.add(child)
        return child


_LIVE: set[subprocess.Popen[str]] = set()
_CLEANUPS: list[Callable[[], object]] = []
_LOCK = threading.RLock()  # re-entrant: a signal handler may run while its thread holds it
_STOPPING = threading.Event()
"""Set once a signal ends the children: threads still at work start no new ones."""
_SPAWNING: set[int] = set()
"""Threads between starting a child and knowing it: a signal handled there waits until it is known."""
_DEFERRED: list[int] = []


@contextlib.contextmanager
def _spawning() -> Iterator[None]:
    me = threading.get_ident()
    _SPAWNING.add(me)
    try:
        yield
    finally:
        _SPAWNING.discard(me)
        if _DEFERRED:  # a signal came while this thread started a child: handle it now it is known
            _on_signal(_DEFERRED.pop(), None)


@contextlib.contextmanager
def cleanup(fn: Callable[[], object]) -> Iterator[None]:
    """Run ``fn`` too if this process is stopped by a signal while the block runs (for processes
    that leave their group: a browser sweeps by its profile)."""
    with _LOCK:
        _CLEANUPS.append(fn)
    try:
        yield
    finally:
        with _LOCK:
            _CLEANUPS.remove(fn)


def end_children() -> int:
    """Kill the process group of every live child and run the registered clean-ups; no child starts
    after this (until :func:`interruptible` returns). How many children were still running."""
    with _LOCK:
        _STOPPING.set()
        live = [c for c in _LIVE if c.poll() is None]
        cleanups = list(_CLEANUPS)
    for child in live:
        _kill_group(child)
    for fn in cleanups:
        with contextlib.suppress(Exception):  # a clean-up that fails must not stop the others
            fn()
    return len(live)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    """End the children; then SIGINT raises KeyboardInterrupt where the main thread is, as Python
    would, and any other signal kills this process as it would have without the handler."""
    if threading.get_ident() in _SPAWNING:  # the child just started is not known yet: end it too
        _DEFERRED.append(signum)
        return
    end_children()
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def end_children_on_signals() -> None:
    """At the process's edge (main thread): SIGTERM, SIGHUP and SIGINT end the children first."""
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, _on_signal)
    # The kernel may hand the signal to any thread, and Python runs the handler only once the main
    # thread wakes, which a wait on a child it came to end can put off for the child's whole timeout.
    # The wakeup fd hears every signal at once: a thread of its own ends the children from there (the
    # main thread's wait then returns and its handler stops onnx-gate).
    _relay_signals({signal.SIGTERM, signal.SIGHUP, signal.SIGINT})


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """Ctrl-C ends the children at once, then raises KeyboardInterrupt where the main thread is, also
    where onnx-gate runs inside another program (a test through click's CliRunner, the test session).

    Without it a KeyboardInterrupt would wait for the threads that wait on children (an executor's
    shutdown joins them), and those children, in sessions of their own, never see the terminal's
    SIGINT. Where a handler is set already (:func:`end_children_on_signals`), or SIGINT is ignored (a
    job run with nohup), or this is not the main thread, nothing is installed. On the way out children
    may start again: the process lives on."""
    previous = signal.getsignal(signal.SIGINT)
    install = threading.current_thread() is threading.main_thread() and previous is signal.default_int_handler
    relay: Callable[[], None] | None = None
    if install:
        signal.signal(signal.SIGINT, _on_signal)
        # The kernel hands a process-wide SIGINT to any thread that takes it: where that is a worker
        # (waiting on a child), the main thread's wait on that worker is never interrupted and the
        # handler never runs. The relay hears it at once and ends the children, so the wait returns.
        relay = _relay_signals({signal.SIGINT})
    try:
        yield
    except KeyboardInterrupt:
        end_children()
        raise
    finally:
        if install:
            signal.signal(signal.SIGINT, previous)
            if relay is not None:
                relay()
            _STOPPING.clear()


def _relay_signals(ending: set[int]) -> Callable[[], None]:
    """Hear every signal with a Python handler on a pipe (the wakeup fd), whatever thread the kernel
    gave it to, and end the children from a thread of its own when it is one of ``ending``. Returns
    what undoes it (the previous wakeup fd back, the thread ended)."""
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    old = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    thread = threading.Thread(target=_relay, args=(read_end, ending), name="onnx-gate-signals", daemon=True)
    thread.start()

    def undo() -> None:
        signal.set_wakeup_fd(old)
        os.close(write_end)  # the relay reads the end of the pipe and stops
        thread.join(timeout=5)

    return undo


def _relay(read_end: int, ending: set[int]) -> None:
    try:
        while heard := os.read(read_end, 64):
            if ending.intersection(heard):  # the wakeup fd writes each signal's number as a byte
                end_children()
    finally:
        os.close(read_end)


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
        with _LOCK:
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


def cpu_count() -> int | None:
    """The CPUs this process may run on (its affinity, as a container or taskset limits it)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
