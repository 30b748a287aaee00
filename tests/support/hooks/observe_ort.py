"""A test hook (tests only; the Python observer ships none): ``python observe_ort.py ARGS`` is
``python -m ci_onnx.observer.ort ARGS`` (one target, or a ``--jobs`` batch), except that where
$ONNX_GATE_TEST_RUNNER_DIE (HOW[:GLOB][;HOW[:GLOB]...], as ``die`` reads it) names a target by its id,
the observer dies right after that target's session loads: SIGKILL, SIGSEGV or SIGABRT as a crash
would, and hang never returns. ``die`` runs it in place of the observer module; the ci_onnx package
comes from the PYTHONPATH the host gives the observer.
"""

from __future__ import annotations

import fnmatch
import os
import signal
import sys
import time
from typing import Any

from ci_onnx.observer import ort

DIE_ENV = "ONNX_GATE_TEST_RUNNER_DIE"


def how_to_die(spec: str, target_id: str) -> str:
    """The HOW of the first entry of ``spec`` whose GLOB (none: every target) matches ``target_id``."""
    for entry in filter(None, spec.split(";")):
        how, _, glob = entry.partition(":")
        if not glob or fnmatch.fnmatchcase(target_id, glob):
            return how
    return ""


def die(how: str) -> None:
    if how == "hang":
        while True:
            time.sleep(60)
    if how in ("SIGKILL", "SIGSEGV", "SIGABRT"):
        os.kill(os.getpid(), getattr(signal, how))


def hook(spec: str) -> None:
    """Make the observer die after the session of a target ``spec`` names has loaded."""
    observe, session = ort.observe, ort._session
    observing = [""]

    def observe_hooked(bundle: Any, target: Any, options: Any, out: Any) -> Any:
        observing[0] = target.id
        return observe(bundle, target, options, out)

    def session_hooked(*args: Any, **kwargs: Any) -> Any:
        loaded = session(*args, **kwargs)
        die(how_to_die(spec, observing[0]))
        return loaded

    ort.observe = observe_hooked  # type: ignore[assignment]
    ort._session = session_hooked  # type: ignore[assignment]


def main() -> None:
    argv = sys.argv[1:]
    spec = os.environ.get(DIE_ENV, "")
    if spec:
        hook(spec)
    rc = ort.main(argv)
    if "--jobs" in argv:  # as the module's own entry point ends a batch
        ort._exit_now(rc)


if __name__ == "__main__":
    main()
