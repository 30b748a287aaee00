"""Run a tool from a test so that Ctrl-C (or its timeout) ends it with everything it started.

``subprocess.run`` kills only the child it started. A tool such as act starts its steps in process
groups of their own, and onnx-gate starts runtimes in sessions of their own, so a SIGINT that
reaches the tool leaves those running (reparented to PID 1, where nobody finds them). Here the tool
runs in a session of its own, so the terminal's SIGINT reaches only pytest and every process of the
tree keeps its parent until it is found: on an interrupt or the timeout the whole tree is stopped,
then killed, before the interrupt goes on to pytest.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children, their children …), read from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rpartition(")")[2].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _signal(pids: Sequence[int], sig: int) -> None:
    for p in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(p, sig)


def kill_tree(pid: int) -> None:
    """SIGKILL ``pid`` and every process below it: stopped first, until the tree stops growing, so
    none forks or exits (and orphans its children) while it is being read."""
    tree = [pid]
    while True:
        _signal(tree, signal.SIGSTOP)
        grown = [pid, *descendants(pid)]
        if set(grown) <= set(tree):
            break
        tree = sorted(set(tree) | set(grown))
    _signal(tree, signal.SIGKILL)


def run(argv: Sequence[str], *, timeout: float, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """``subprocess.run(argv, capture_output=True, text=True)``, but an interrupt or the timeout
    kills the whole tree; the timeout raises ``subprocess.TimeoutExpired`` as run's does."""
    with subprocess.Popen(
        list(argv),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        **kwargs,
    ) as child:
        try:
            out, err = child.communicate(timeout=timeout)
        except BaseException:  # KeyboardInterrupt, TimeoutExpired
            kill_tree(child.pid)
            child.communicate()
            raise
    return subprocess.CompletedProcess(child.args, child.returncode, out, err)
