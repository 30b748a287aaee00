"""Live progress of a local run: one line per target, redrawn in place on a terminal.

On a terminal the block of target lines is redrawn as states change (queued → env → running →
passed/failed/error/skipped). Anywhere else (a CI log, a pipe) each change is one plain line, so logs
stay readable and greppable.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import TextIO

_MARK = {
    "queued": "·",
    "env": "…",
    "running": "▶",
    "passed": "✓",
    "failed": "✗",
    "error": "!",
    "expected": "-",
    "skipped": "-",
    "unchanged": "=",
}
_COLOUR = {
    "passed": "32",
    "failed": "31",
    "error": "31;1",
    "expected": "2",
    "skipped": "2",
    "unchanged": "2",
    "running": "36",
}


class Progress:
    def __init__(self, ids: Sequence[str], stream: TextIO, *, live: bool) -> None:
        self._ids = list(ids)
        self._state = dict.fromkeys(self._ids, "queued")
        self._detail = dict.fromkeys(self._ids, "")
        self._started: dict[str, float] = {}
        self._stream = stream
        self._live = live
        self._drawn = 0
        self._lock = threading.Lock()
        self._width = max((len(i) for i in self._ids), default=10)

    def update(self, target_id: str, state: str, detail: str = "") -> None:
        with self._lock:
            self._state[target_id] = state
            self._detail[target_id] = detail
            if state == "running":
                self._started[target_id] = time.monotonic()
            elif state in ("passed", "failed", "error") and target_id in self._started:
                took = time.monotonic() - self._started[target_id]
                self._detail[target_id] = f"{detail} ({took:.1f} s)".strip()
            if self._live:
                self._redraw()
            else:
                self._stream.write(self._line(target_id, colour=False) + "\n")
                self._stream.flush()

    def counts(self) -> dict[str, int]:
        with self._lock:
            out: dict[str, int] = {}
            for state in self._state.values():
                out[state] = out.get(state, 0) + 1
            return out

    def _line(self, target_id: str, *, colour: bool) -> str:
        state = self._state[target_id]
        mark, detail = _MARK.get(state, "?"), self._detail[target_id]
        text = f"{mark} {target_id:<{self._width}}  {state:<8} {detail}".rstrip()
        if colour and state in _COLOUR:
            return f"\x1b[{_COLOUR[state]}m{text}\x1b[0m"
        return text

    def _redraw(self) -> None:
        if self._drawn:
            self._stream.write(f"\x1b[{self._drawn}F")
        for target_id in self._ids:
            self._stream.write("\x1b[2K" + self._line(target_id, colour=True)[:200] + "\n")
        self._drawn = len(self._ids)
        self._stream.flush()
