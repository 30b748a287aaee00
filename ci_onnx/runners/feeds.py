"""Inputs in, outputs out: reading a bundle's test data, running it, writing what came back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ci_onnx import tensorproto
from ci_onnx.bundle import Manifest


def read_inputs(manifest: Manifest, bundle: Path, directory: str) -> dict[str, np.ndarray]:
    feeds = {}
    for i, spec in enumerate(manifest.inputs):
        _, value = tensorproto.load(bundle / directory / f"input_{i}.pb")
        feeds[spec.name] = value
    return feeds


def first(feeds: dict[str, np.ndarray], n: int) -> dict[str, np.ndarray]:
    """The first ``n`` samples (cycling when the set holds fewer)."""
    return {k: np.take(v, np.arange(n) % v.shape[0], axis=0) for k, v in feeds.items()}


def fixed_batch(sess: Any) -> dict[str, int]:
    """Inputs whose batch axis (axis 0) is a fixed number in the model."""
    return {i.name: i.shape[0] for i in sess.get_inputs() if i.shape and isinstance(i.shape[0], int)}


def run(sess: Any, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, feeds), strict=True))


def run_stacked(sess: Any, feeds: dict[str, np.ndarray], count: int) -> dict[str, np.ndarray]:
    """All ``count`` samples in one run where the batch axis is dynamic, else in chunks it accepts."""
    fixed = set(fixed_batch(sess).values())
    chunk = fixed.pop() if len(fixed) == 1 else count
    if chunk == count or chunk <= 0 or count % chunk:
        return run(sess, feeds)
    parts = [run(sess, {k: v[i : i + chunk] for k, v in feeds.items()}) for i in range(0, count, chunk)]
    return {name: np.concatenate([p[name] for p in parts], axis=0) for name in parts[0]}


def save(out: Path, directory: str, manifest: Manifest, outputs: dict[str, np.ndarray]) -> dict[str, str]:
    (out / directory).mkdir(parents=True, exist_ok=True)
    files = {}
    for i, spec in enumerate(manifest.outputs):
        if spec.name in outputs:
            rel = f"{directory}/output_{i}.pb"
            tensorproto.save(out / rel, outputs[spec.name], spec.name)
            files[spec.name] = rel
    return files
