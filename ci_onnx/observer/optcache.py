"""The optimized-model cache, on the runner's side: write a cell's optimized graph once, load it later.

onnxruntime spends part of session creation optimizing the graph; ``SessionOptions.optimized_model_filepath``
saves the result, and a session created from that file with graph optimization disabled skips the work.
A saved graph is only valid for the release, provider list and session options that made it, so the
entry is keyed on all of them and the model's sha256 (:func:`key`), under the runner's cache directory.

:func:`probe` runs after the observation proper (nothing it does is in the latency or memory figures):
it writes the entry on a miss, runs the parity data sets on a session from the cached file, and times
session creation from the original and from the cached file, interleaved. It writes ``optcache.json``
beside observation.json and the cached outputs under ``optcache/``; the judge compares them with the
outputs of the original session (ci_onnx.verify.cache_check). Standard library, numpy and onnxruntime.
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ci_onnx.observer import session

FILE = "optcache.json"
OUTPUTS = "optcache"
REPEATS = 5
"""Session creations timed per kind (original, cached), interleaved; the figures are their medians."""
KEY_VERSION = 1


def key(
    runtime_version: str, providers: Sequence[str], settings: Mapping[str, Any], model_sha256: str
) -> str:
    """The cache entry of a graph optimized by ``runtime_version`` for ``providers`` under ``settings``."""
    material = {
        "v": KEY_VERSION,
        "runtime": runtime_version,
        "providers": list(providers),
        "session_options": {k: settings[k] for k in sorted(settings) if k != "name"},
        "model": model_sha256,
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()[:32]


def entry(cache_dir: Path, cache_key: str) -> Path:
    return cache_dir / cache_key / "model.onnx"


def _options(ort: Any, settings: Mapping[str, Any], *, cached: bool) -> Any:
    so = ort.SessionOptions()
    so.log_severity_level = 3
    session.apply(ort, so, settings)
    if cached:  # the file is already optimized; optimizing again would only cost the time saved
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return so


def write(ort: Any, model: str, providers: Sequence[str], settings: Mapping[str, Any], path: Path) -> None:
    """Create a session that saves its optimized graph to ``path`` (atomically: a temporary, then rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    so = _options(ort, settings, cached=False)
    so.optimized_model_filepath = str(tmp)
    try:
        ort.InferenceSession(model, so, providers=list(providers))
        if not tmp.is_file():
            raise RuntimeError("the runtime wrote no optimized model")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _create_ms(ort: Any, model: str, so: Any, providers: Sequence[str]) -> tuple[float, Any]:
    start = time.perf_counter()
    sess = ort.InferenceSession(model, so, providers=list(providers))
    return (time.perf_counter() - start) * 1000.0, sess


def probe(
    ort: Any,
    model: str,
    providers: Sequence[str],
    settings: Mapping[str, Any],
    cache_dir: Path,
    model_sha256: str,
    run_sets: Callable[[Any], dict[str, dict[str, str]]],
    out: Path,
    repeats: int = REPEATS,
) -> dict[str, Any]:
    """Use (or fill) the cache for this cell and write what happened to ``out/optcache.json``.

    ``run_sets(sess)`` runs the parity data sets on a session and saves their outputs, returning the
    saved files by data set and output (as the observation's ``outputs``).
    """
    cache_key = key(ort.__version__, providers, settings, model_sha256)
    path = entry(cache_dir, cache_key)
    record: dict[str, Any] = {"key": cache_key, "path": str(path), "providers": list(providers)}
    try:
        record["state"] = "hit" if path.is_file() else "written"
        if not path.is_file():
            write(ort, model, providers, settings, path)
        record["cached_bytes"] = path.stat().st_size
        original, cached = [], []
        sess = None
        for _ in range(repeats):
            # One session alive at a time: a live session's threads compete with the next creation
            # (on 2 cores that tripled the probe's time), and only the last cached one is kept.
            sess = None
            ms, made = _create_ms(ort, model, _options(ort, settings, cached=False), providers)
            original.append(ms)
            del made
            ms, sess = _create_ms(ort, str(path), _options(ort, settings, cached=True), providers)
            cached.append(ms)
        record["create_ms_original"] = round(statistics.median(original), 3)
        record["create_ms_cached"] = round(statistics.median(cached), 3)
        record["repeats"] = repeats
        saved = run_sets(sess)
        record["outputs"] = {
            d: {n: f"{OUTPUTS}/{rel}" for n, rel in files.items()} for d, files in saved.items()
        }
        record["error"] = ""
    except Exception as exc:  # a provider whose compiled nodes cannot be saved, a full disk: say so
        record["error"] = " ".join(str(exc).split())[:500] or type(exc).__name__
    (out / FILE).write_text(json.dumps(record, indent=2) + "\n")
    return record
