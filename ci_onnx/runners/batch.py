"""Several targets of one environment observed by one child process, with crash isolation kept.

The interpreter and the runtime's imports are paid once per environment instead of once per target.
The parent writes the jobs (one observer argument list each, exactly what a per-target launch would
pass) to a file and starts ``OBSERVER --jobs FILE``; the child observes them in order and prints one
marker line per finished job on stderr (:data:`MARKER`, its index and its exit status). The parent reads the
markers with every job's own timeout, counted from the moment the child became free for it:

- a job that hangs past its timeout is that job's ``timed out`` result; the child is killed (its
  whole process group) and the jobs after it run in a fresh child;
- a child that dies (SIGSEGV, SIGKILL, ``os._exit``) makes the job in flight an error naming the
  signal, and the rest run in a fresh child;
- a job that raised in the child is that job's ``exit code 1`` with its traceback, and the child goes on.

Each job's :class:`~ci_onnx.contracts.proc.Completed` reads as a per-target launch's would, so the
verify stage judges the two alike. The child's environment is
:func:`ci_onnx.contracts.proc.child_environment` of what the caller passes: the one rule, no token
of any name.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO

from ci_onnx.contracts import proc
from ci_onnx.contracts.errors import EnvironmentProblem
from ci_onnx.contracts.target import Target
from ci_onnx.observer.jobs import parse_marker, write_jobs

JOBS_FILE = "jobs-{attempt}.json"
MAX_ATTEMPTS_EXTRA = 1
"""Beyond one child per job that fails: the child count is bounded by the jobs plus this."""


@dataclasses.dataclass(frozen=True)
class Job:
    """One target's observer arguments (what ``--jobs`` replays) and its own timeout."""

    argv: tuple[str, ...]
    timeout_s: float
    label: str = ""
    """What the job is, for messages (the target id)."""


OnDone = Callable[[int, proc.Completed], None]


class Early:
    """A child started before its jobs are known (``PROGRAM --jobs -``): it pays its interpreter and
    imports while the parent still prepares (reads and hashes the bundles), then reads its jobs on
    stdin. :func:`run_jobs` hands them to it as its first child; :meth:`close` ends one never used."""

    def __init__(self, program: Sequence[str], env: Mapping[str, str], what: str, workdir: Path) -> None:
        self.argv = (*program, "--jobs", "-")
        self.env = env
        """What the child was started with; a fresh child after a crash gets the same."""
        self.workdir = workdir
        self.child: subprocess.Popen[str] | None = proc.spawn(self.argv, env, what, stdin=subprocess.PIPE)

    def take(self) -> subprocess.Popen[str] | None:
        """The child, once: whoever takes it owns it."""
        child, self.child = self.child, None
        return child

    def close(self) -> None:
        """End the child if nobody took it: stdin closed (no jobs, it exits), killed if it lingers."""
        child = self.take()
        if child is None:
            return
        with contextlib.suppress(OSError):
            if child.stdin is not None:
                child.stdin.close()
        try:
            child.wait(timeout=proc.DRAIN_S * 5)
        except subprocess.TimeoutExpired:
            _kill_group(child)
            child.wait()
        for pipe in (child.stdout, child.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()


def _hand_jobs(child: subprocess.Popen[str], jobs: Sequence[tuple[int, Sequence[str]]]) -> None:
    """Write an early child's jobs to its stdin and close it. A child that already died reads
    nothing; its exit is the first job's error, as for any child that dies."""
    if child.stdin is None:
        return
    try:
        child.stdin.write(json.dumps([{"index": i, "argv": list(argv)} for i, argv in jobs]))
    except OSError:  # BrokenPipeError: it is gone
        pass
    finally:
        with contextlib.suppress(OSError):
            child.stdin.close()


def run_jobs(
    program: Sequence[str],
    jobs: Sequence[Job],
    *,
    workdir: Path,
    env: Mapping[str, str],
    on_done: OnDone | None = None,
    what: str = "runner",
    early: Early | None = None,
) -> list[proc.Completed]:
    """Run ``jobs`` in as few children of ``program + ["--jobs", FILE]`` as crashes and hangs allow;
    the first child is ``early``'s where one was started (:class:`Early`).

    Returns one Completed per job, in order; ``on_done`` hears each as soon as it is known (in the
    calling thread, while the child goes on with the next job)."""
    for job in jobs:
        if not (math.isfinite(job.timeout_s) and 0 < job.timeout_s <= proc.MAX_TIMEOUT_S):
            raise EnvironmentProblem(
                f"{job.label or what}: a timeout of {job.timeout_s!r} s is not between 0 and "
                f"{proc.MAX_TIMEOUT_S:.0f} s"
            )
    results: dict[int, proc.Completed] = {}
    pending = list(range(len(jobs)))
    attempt = 0
    while pending:
        attempt += 1
        if attempt > len(jobs) + MAX_ATTEMPTS_EXTRA:  # cannot happen: each child settles one job at least
            raise RuntimeError("the batch runner made no progress")

        def settle(i: int, done: proc.Completed) -> None:
            results[i] = done
            if on_done is not None:
                on_done(i, done)

        started = early.take() if early is not None and attempt == 1 else None
        if started is not None and early is not None:
            _hand_jobs(started, [(i, jobs[i].argv) for i in pending])
            finished = _one_child(early.argv, jobs, pending, env, what, settle, child=started)
        else:
            jobs_file = workdir / JOBS_FILE.format(attempt=attempt)
            write_jobs(jobs_file, [(i, jobs[i].argv) for i in pending])
            argv = (*program, "--jobs", str(jobs_file))
            finished = _one_child(argv, jobs, pending, env, what, settle)
            jobs_file.unlink(missing_ok=True)
        pending = [i for i in pending if i not in finished]
    return [results[i] for i in range(len(jobs))]


def _one_child(
    argv: tuple[str, ...],
    jobs: Sequence[Job],
    pending: list[int],
    env: Mapping[str, str],
    what: str,
    settle: Callable[[int, proc.Completed], None],
    child: subprocess.Popen[str] | None = None,
) -> set[int]:
    """Start one child on ``pending`` (or serve them with ``child``, started early and handed them
    already); ``settle`` each job as soon as it is known (every one it finishes, then the one it
    crashed or hung on); the jobs settled (the rest are for the next child). The first job's timeout
    counts from now: an early child's wait for its jobs is not the job's time."""
    started = time.monotonic()
    if child is None:
        child = proc.spawn(argv, env, what)
    events: queue.Queue[tuple[str, str, float]] = queue.Queue()
    stderr: list[str] = []
    readers = [
        threading.Thread(target=_read, args=(child.stdout, "out", events), daemon=True),
        threading.Thread(target=_read, args=(child.stderr, "err", events), daemon=True),
    ]
    for r in readers:
        r.start()
    settled: set[int] = set()

    def done_with(index: int, done: proc.Completed) -> None:
        settled.add(index)
        settle(index, done)

    stdout_of_job: list[str] = []
    err_mark = 0
    job_start = started
    open_streams = 2
    pos = 0  # the job in flight is pending[pos]
    while pos < len(pending):
        index = pending[pos]
        deadline = job_start + jobs[index].timeout_s
        try:
            kind, line, at = events.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            _kill_group(child)
            _finish(child, readers, events, stderr)
            err = "".join(stderr[err_mark:])
            done = proc.Completed(
                argv, child.returncode, "".join(stdout_of_job), err, time.monotonic() - job_start, True
            )
            done_with(index, done)
            return settled
        if kind == "eof":
            open_streams -= 1
            if open_streams:
                continue
            break  # the child closed both pipes: it exited (or died) before finishing pending[pos]
        if kind == "out":
            stdout_of_job.append(line)
            continue
        marker = parse_marker(line)
        if marker is None or marker[0] != index:
            stderr.append(line)
            continue
        rc = marker[1]
        done = proc.Completed(
            argv, rc, "".join(stdout_of_job), "".join(stderr[err_mark:]), at - job_start, False
        )
        done_with(index, done)
        stdout_of_job, err_mark, job_start = [], len(stderr), at
        pos += 1
    _finish(child, readers, events, stderr)
    if pos < len(pending):  # it died with a job in flight: that job's error, whatever the signal
        code = child.returncode if child.returncode != 0 else 1
        err = "".join(stderr[err_mark:])
        if child.returncode == 0:
            err += "\nthe runner exited before it finished this target"
        done = proc.Completed(argv, code, "".join(stdout_of_job), err, time.monotonic() - job_start, False)
        done_with(pending[pos], done)
    return settled


def _read(stream: IO[str] | None, kind: str, events: queue.Queue[tuple[str, str, float]]) -> None:
    try:
        for line in stream or ():
            events.put((kind, line, time.monotonic()))
    except (OSError, ValueError):
        pass
    events.put(("eof", "", time.monotonic()))


def _finish(
    child: subprocess.Popen[str],
    readers: list[threading.Thread],
    events: queue.Queue[tuple[str, str, float]],
    stderr: list[str],
) -> None:
    """Wait for the child and its pipes (a grandchild that left the group must not hold us), then
    keep whatever stderr arrived."""
    try:
        child.wait(timeout=proc.DRAIN_S * 5)
    except subprocess.TimeoutExpired:
        _kill_group(child)
        child.wait()
    for r in readers:
        r.join(timeout=proc.DRAIN_S)
    for pipe in (child.stdout, child.stderr):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()
    while True:
        try:
            kind, line, _ = events.get_nowait()
        except queue.Empty:
            break
        if kind == "err":
            stderr.append(line)


def _kill_group(child: subprocess.Popen[str]) -> None:
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, AttributeError):
        child.kill()


def environment_key(target: Target) -> tuple[str, str, str]:
    """What decides the environment a target is observed in: its runner kind, its release and the
    package that ships that release for its provider (cpu and xnnpack share onnxruntime's)."""
    from ci_onnx import matrix

    info = matrix.runners().get(target.runner)
    provider = matrix.providers().get(target.provider)
    if info is None or (not info.package and provider is None):
        return (target.runner, target.runtime, f"?{target.provider}")  # its own error, alone
    return (target.runner, target.runtime, info.package_for(target.provider))


def groups(targets: Sequence[Target], workers: int) -> list[list[Target]]:
    """The targets in groups that share an environment, each one child's work, largest first.

    A group is split only to keep ``workers`` busy: each environment gets a share of the workers
    proportional to its targets (at least one), so a machine with many cores still runs in parallel,
    and one with few pays the interpreter and imports once per environment."""
    by_env: dict[tuple[str, str, str], list[Target]] = {}
    for t in targets:
        by_env.setdefault(environment_key(t), []).append(t)
    total = len(targets)
    out: list[list[Target]] = []
    for members in by_env.values():
        share = max(1, min(len(members), round(max(1, workers) * len(members) / total)))
        size = math.ceil(len(members) / share)
        out.extend(members[i : i + size] for i in range(0, len(members), size))
    return sorted(out, key=len, reverse=True)
