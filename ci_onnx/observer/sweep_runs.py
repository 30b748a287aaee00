"""The sweep points of a bundle (its ``sweep_sets``), run and timed in a runner's session.

In-environment code (numpy + the runtime): each point's inputs are run once (that first run at the
shape is timed by itself), the outputs written for the judge, then the point is timed like a batch
size (ci_onnx.observer.measure.latency), for as many runs as fit the sweep budget
(measure.sweep_runs). A point that fails to run is recorded with the runtime's own
message, so ``sweep[seq=7]`` fails naming the point and the node that refused it.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from pathlib import Path
from typing import Any

from ci_onnx.contracts.bundle import Manifest
from ci_onnx.contracts.results import LatencyStat, Observation
from ci_onnx.observer import feeds, measure


def observe(
    sess: Any, manifest: Manifest, bundle: Path, out: Path, obs: Observation, runs: int
) -> Observation:
    """``obs`` with every sweep point's outputs, errors and latency."""
    outputs: dict[str, dict[str, str]] = {}
    errors: dict[str, str] = {}
    stats: list[LatencyStat] = []
    for sw in manifest.sweep_sets:
        if not sw.directory:  # the reference could not be made there: the judge says why
            continue
        try:
            data = feeds.read_inputs(manifest, bundle, sw.directory)
            start = time.perf_counter()
            got = feeds.run(sess, data)
            first = (time.perf_counter() - start) * 1000.0
        except Exception as exc:
            errors[sw.directory] = " ".join(str(exc).split())[:2000] or type(exc).__name__
            continue
        outputs[sw.directory] = feeds.save(out, sw.directory, manifest, got)
        run = functools.partial(feeds.run, sess, data)
        warm, timed = measure.sweep_runs(first, runs)
        stats.append(measure.latency(sw.count, run, timed, point=sw.label, first_ms=first, warmups=warm))
    return dataclasses.replace(obs, sweep_outputs=outputs, sweep_errors=errors, sweep_latency=tuple(stats))
