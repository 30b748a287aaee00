"""The ``--jobs`` protocol of a batch child, the side of it that runs inside the environment.

The parent (ci_onnx.runners.batch) writes the jobs (one observer argument list each, what a launch of
its own would pass) to a file or the child's stdin; the child observes them in order with
:func:`serve` and prints one marker line per finished job on stderr.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

MARKER = "onnx-gate-batch-done"
"""``MARKER INDEX RC`` on the child's stderr: job INDEX finished with exit status RC. On stderr, after
the job's own lines there, so each job's stderr (what a failure quotes) is exactly its own; stdout
(the observer writes none) goes to the job in flight when it arrives."""


def done_line(index: int, rc: int) -> str:
    return f"{MARKER} {index} {rc}"


def parse_marker(line: str) -> tuple[int, int] | None:
    parts = line.split()
    if len(parts) == 3 and parts[0] == MARKER:
        try:
            return int(parts[1]), int(parts[2])
        except ValueError:
            return None
    return None


def write_jobs(path: Path, jobs: Sequence[tuple[int, Sequence[str]]]) -> None:
    path.write_text(json.dumps([{"index": i, "argv": list(argv)} for i, argv in jobs]))


def read_jobs(path: str) -> list[tuple[int, list[str]]]:
    """The jobs file the parent wrote: ``[{"index": I, "argv": [...]}, …]``."""
    text = sys.stdin.read() if path == "-" else Path(path).read_text()
    if path == "-" and not text.strip():  # an early child whose jobs never came: nothing to do
        return []
    return [(int(j["index"]), [str(a) for a in j["argv"]]) for j in json.loads(text)]


def serve(path: str, observe_one: Callable[[list[str]], int]) -> int:
    """The child's loop: every job in turn, one marker line after each, whatever it returned."""
    import traceback

    for index, argv in read_jobs(path):
        try:
            rc = observe_one(argv)
        except SystemExit as exc:  # argparse's error: that job's usage error, not the batch's
            if exc.code is not None and not isinstance(exc.code, int):
                print(exc.code, file=sys.stderr)
            rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except Exception:
            traceback.print_exc()
            rc = 1
        sys.stdout.flush()
        print(done_line(index, rc), file=sys.stderr, flush=True)  # after the job's own stderr lines
    return 0
