"""Cold start and footprint of serving a bundle, in the target's own environment.

Two halves. :func:`attach` runs in the observer (``ci_onnx.observer.ort``, after everything else is
measured): it sums the installed size of the runtime's and numpy's distributions and of the model's
files, writes one request's inputs, and times a FRESH process of the same interpreter,
``python …/serve_once.py SPEC_JSON`` (ci_onnx.observer.serve_once, started as a script), from its start
to its first answer (a JSON line on stdout). That process imports only sys, json and time before it
times ``import numpy, onnxruntime``, the session's creation, the first run, then more runs for the
warm median of the same process.

What cannot be measured goes to ``Observation.unmeasured["cold_start"]`` with the reason, and the
judge skips what needs it; a crash or a hang of the fresh process is such a reason, never an abort.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

WARM_RUNS = 10
TIMEOUT_S = 120.0
FEEDS = "coldstart_feeds.npz"
SERVE_ONCE = Path(__file__).resolve().with_name("serve_once.py")
"""The fresh process, started as a script: nothing of the package is imported before its clock."""
KEY = "cold_start"
"""The key of ``Observation.unmeasured`` that says why there is no cold start."""


# -- the observer's side ----------------------------------------------------------------------------


def attach(
    obs: Any, bundle: Path, providers: Sequence[str], out: Path, engine: dict[str, Any] | None = None
) -> Any:
    """``obs`` with its ServingFigures; what could not be measured goes to ``unmeasured``. ``engine``:
    a kind's own engine in place of onnxruntime (serve_once's ``engine``, with its ``package``)."""
    import dataclasses

    from ci_onnx.contracts.bundle import MODEL, read_manifest
    from ci_onnx.contracts.results import ServingFigures

    if engine is not None:
        runtime, runtime_bytes = engine["package"], distribution_size(engine["package"])
    else:
        runtime, runtime_bytes = runtime_size()
    model_bytes = sum(p.stat().st_size for p in bundle.glob(f"{MODEL}*") if p.is_file())
    numpy_bytes = distribution_size("numpy")
    sizes = [runtime_bytes, numpy_bytes, model_bytes]
    figures = ServingFigures(
        runtime_package=runtime,
        runtime_bytes=runtime_bytes,
        numpy_bytes=numpy_bytes,
        model_bytes=model_bytes,
        env_bytes=sum(b for b in sizes if b is not None) if all(b is not None for b in sizes) else None,
    )
    try:
        manifest = read_manifest(bundle, verify_hashes=False)
        names, batch = write_feeds(manifest, bundle, out / FEEDS)
        timed = cold_start(bundle / MODEL, providers, out / FEEDS, names, engine)
    except Unmeasurable as exc:
        unmeasured = {**obs.unmeasured, KEY: str(exc)}
        return dataclasses.replace(obs, serving=figures, unmeasured=unmeasured)
    warm = sorted(timed.pop("warm_ms"))
    figures = dataclasses.replace(
        figures,
        **timed,
        warm_median_ms=round(_median(warm), 4) if warm else None,
        warm_runs=len(warm),
        batch_size=batch,
    )
    return dataclasses.replace(obs, serving=figures)


class Unmeasurable(Exception):
    """Why the cold start could not be measured (a one-line reason)."""


def write_feeds(manifest: Any, bundle: Path, path: Path) -> tuple[list[str], int]:
    """One request's inputs (the first sample where there is a batch axis) as arrays i0, i1, …"""
    import numpy as np

    from ci_onnx.contracts import tensorproto
    from ci_onnx.contracts.tensorproto import Tensor
    from ci_onnx.observer import feeds

    if not manifest.test_data_sets:
        raise Unmeasurable("the bundle holds no test data to answer a request with")
    data = feeds.read_inputs(manifest, bundle, manifest.test_data_sets[0].directory)
    batched = not feeds.batch_axis_problem(manifest)
    request = feeds.first(data, 1, feeds.input_axes(manifest)) if batched else data
    arrays = {}
    for k, spec in enumerate(manifest.inputs):
        value = request[spec.name]
        if not isinstance(value, Tensor):
            raise Unmeasurable(f"input {spec.name!r} is not a tensor; the fresh process feeds tensors only")
        if value.data_type in tensorproto.BITS:
            raise Unmeasurable(f"input {spec.name!r} has a type numpy lacks; the fresh process feeds numpy")
        arrays[f"i{k}"] = value.array
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, **arrays)  # type: ignore[arg-type]
    batch = int(next(iter(arrays.values())).shape[0]) if arrays and batched else 0
    return [s.name for s in manifest.inputs], batch


def cold_start(
    model: Path,
    providers: Sequence[str],
    feeds_path: Path,
    names: list[str],
    engine: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Start a fresh process of this interpreter and time it to its first answer."""
    spec: dict[str, Any] = {
        "model": str(model), "providers": list(providers), "feeds": str(feeds_path), "names": names,
        "runs": WARM_RUNS,
    }  # fmt: skip
    if engine is not None:
        spec["engine"] = engine
    args = [sys.executable, str(SERVE_ONCE), json.dumps(spec)]
    errors = feeds_path.with_suffix(".stderr")
    with errors.open("w") as err:
        start = time.perf_counter()
        try:
            child = subprocess.Popen(
                args, stdout=subprocess.PIPE, stderr=err, text=True, env=dict(os.environ)
            )
        except OSError as exc:
            raise Unmeasurable(f"the fresh process did not start: {exc}") from None
        first_line = _read(child, TIMEOUT_S, whole=False)
        answered = time.perf_counter()
        rest = _read(child, TIMEOUT_S, whole=True) if first_line else ""
        code = child.wait()
    if code != 0 or not first_line:
        tail = errors.read_text(errors="replace").strip().splitlines()
        why = tail[-1][:300] if tail else "no message"
        raise Unmeasurable(f"the fresh process failed (exit {code}): {why}")
    try:
        timed: dict[str, Any] = json.loads(first_line)
        timed["warm_ms"] = json.loads(rest.strip().splitlines()[-1])["warm_ms"]
    except (ValueError, KeyError, IndexError) as exc:
        raise Unmeasurable(f"the fresh process wrote no figures ({type(exc).__name__}: {exc})") from None
    timed["cold_start_ms"] = round((answered - start) * 1000.0, 4)
    return timed


def _read(child: subprocess.Popen[str], timeout: float, *, whole: bool) -> str:
    """The child's first line of stdout (or all the rest, ``whole``); after ``timeout`` the child is
    killed and the cold start is unmeasurable."""
    import threading

    got: list[str] = []

    def read() -> None:
        if child.stdout is not None:
            got.append(child.stdout.read() if whole else child.stdout.readline())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout)
    if reader.is_alive():
        child.kill()
        child.wait()
        raise Unmeasurable(f"the fresh process did not {'finish' if whole else 'answer'} in {timeout:.0f} s")
    return got[0] if got else ""


def _median(values: Sequence[float]) -> float:
    n = len(values)
    return values[n // 2] if n % 2 else (values[n // 2 - 1] + values[n // 2]) / 2


@functools.cache
def runtime_size() -> tuple[str, int | None]:
    """The distribution that provides ``import onnxruntime`` (onnxruntime, onnxruntime-openvino …)
    and the size of its installed files. Once per process: a batch runner serves every target of
    one environment, and the environment does not change under it."""
    import importlib.metadata

    name = _beside_the_import()
    if not name:
        name = next(iter(importlib.metadata.packages_distributions().get("onnxruntime", [])), "")
    return (name, distribution_size(name)) if name else ("", None)


def _beside_the_import() -> str:
    """The name of the onnxruntime* distribution installed beside ``import onnxruntime`` whose RECORD
    lists its ``__init__.py``: a look at one folder, where scanning every distribution's metadata
    (packages_distributions) costs more than the sizes themselves; "" when that does not tell."""
    import importlib.metadata
    import importlib.util

    spec = importlib.util.find_spec("onnxruntime")
    if spec is None or not spec.origin:
        return ""
    site = Path(spec.origin).parent.parent
    for info in sorted(site.glob("onnxruntime*.dist-info")):
        try:
            if "onnxruntime/__init__.py," in (info / "RECORD").read_text(errors="replace"):
                return str(importlib.metadata.Distribution.at(info).metadata["Name"] or "")
        except OSError:
            continue
    return ""


@functools.cache
def distribution_size(name: str) -> int | None:
    """Bytes on disk of every file the installed distribution ``name`` lists (its RECORD); None if
    unknown. Once per process, as :func:`runtime_size`."""
    import importlib.metadata

    try:
        files = importlib.metadata.distribution(name).files
    except importlib.metadata.PackageNotFoundError:
        return None
    if not files:
        return None
    base = str(importlib.metadata.distribution(name).locate_file(""))
    total = 0
    for f in files:  # os.stat of joined strings: pathlib per file costs more than the stat itself
        try:
            total += os.stat(os.path.join(base, str(f))).st_size
        except OSError:
            continue
    return total
