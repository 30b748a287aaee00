"""The one way onnx-gate starts an external process: an argument list, a timeout, output captured.

No ``shell=True`` anywhere. A crash is reported by signal name, a hang by its timeout, so a runtime
that segfaults or hangs becomes a value the caller can record rather than an exception that escapes.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from ci_onnx.errors import EnvironmentProblem


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


def run(
    args: Sequence[str | os.PathLike[str]],
    *,
    timeout: float,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    check: bool = False,
    what: str = "",
) -> Completed:
    """Run ``args``; with ``check``, a failure raises EnvironmentProblem naming ``what``."""
    argv = tuple(os.fspath(a) for a in args)
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            start_new_session=True,  # so a timeout can kill the whole process group
        )
    except OSError as exc:
        raise EnvironmentProblem(f"{what or argv[0]}: cannot start {argv[0]} ({exc.strerror})") from None
    try:
        out, err = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, err = proc.communicate()
        timed_out = True
    done = Completed(argv, proc.returncode, out, err, time.monotonic() - start, timed_out)
    if check and not done.ok:
        raise EnvironmentProblem(f"{what or argv[0]} failed, {done.describe_failure()}")
    return done


def _kill_group(proc: subprocess.Popen[str]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
