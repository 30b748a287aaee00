"""The injection suite's ground truth, computed apart from the gate's code.

The model (its mutant, rebuilt) on fresh copies of inputs drawn here, against the exported file on
onnxruntime CPU: at the export sizes and at sizes of its own for every declared dynamic dim (not the
gate's sweep sizes), outputs paired by the names the model returns where it names them all, two torch
runs on the same inputs, and a derived precision's file with that precision's tolerance. Only the
binding of the declared inputs to ``forward`` is the gate's (it is how the config is read).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np


@dataclasses.dataclass(frozen=True)
class Truth:
    broken: bool
    why: str = ""


def truth_sizes(export_size: int) -> tuple[int, ...]:
    """The suite's own sizes for a dynamic dim (not the gate's): small, odd, just past, well past."""
    return tuple(s for s in dict.fromkeys((1, 3, export_size + 1, 2 * export_size + 3)) if s != export_size)


def ground_truth(cfg: Any, model_name: str, mutation: str, bundle: Path, precision: str) -> Truth:
    """Whether the exported file computes what the model computes, judged without the gate's code."""
    import onnxruntime as ort
    import torch

    from tests.injection import mutants

    path = bundle / "model.onnx"
    if not path.is_file():
        return Truth(True, "no model file was written")
    try:
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    except Exception as exc:
        return Truth(True, f"onnxruntime cannot load it: {str(exc)[:120]}")
    torch.manual_seed(1234)
    model = mutants.build(model_name, mutation).eval()
    tol = cfg.verify.precision_tolerance[precision][0] if precision != "fp32" else cfg.verify.tolerance
    m = cfg.model
    base = {s: 2 for s in _symbols(m)}
    base.update({k: v for k, v in m.dim_sizes.items() if k in base})
    rng = np.random.default_rng(4242)
    grid = [dict(base)] + [{**base, s: n} for s in base for n in truth_sizes(base[s])]
    first = _inputs(m, base, rng)
    once, again = _torch(model, m, first), _torch(model, m, first)
    if once is not None and again is not None and not _close(once, again, tol):
        return Truth(True, "torch gives two answers on the same inputs")
    for sizes in grid:
        feeds = _inputs(m, sizes, rng)
        expected = _torch(model, m, feeds)
        if expected is None:
            continue  # torch itself rejects these sizes
        try:
            got = session.run(None, feeds)
        except Exception:
            return Truth(True, f"onnxruntime fails at {sizes}")
        names = [o.name for o in session.get_outputs()]
        for name, value in zip(names, got, strict=False):
            ref = expected.get(name)
            if ref is None or ref.shape != value.shape or not np.allclose(value, ref, tol.rtol, tol.atol):
                return Truth(True, f"output {name!r} differs from torch at {sizes}")
    return Truth(False)


def _symbols(m: Any) -> list[str]:
    return list(
        dict.fromkeys(n for axes in m.dynamic_axes.values() for n in axes.values() if n in _input_symbols(m))
    )


def _input_symbols(m: Any) -> set[str]:
    return {n for s in m.inputs for n in m.dynamic_axes.get(s.name, {}).values()}


def _inputs(m: Any, sizes: Mapping[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    out = {}
    for spec in m.inputs:
        axes = m.dynamic_axes.get(spec.name, {})
        shape = [sizes[axes[str(i)]] if str(i) in axes else d for i, d in enumerate(spec.shape)]
        dtype = np.dtype(spec.dtype)
        if dtype.kind in "iu":
            low, high = spec.value_range
            out[spec.name] = rng.integers(int(low), int(high), size=shape).astype(dtype)
        else:
            out[spec.name] = rng.standard_normal(size=shape).astype(dtype)
    return out


def _torch(model: Any, m: Any, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray] | None:
    """The model's outputs by name: its own names where it gives them all, else the declared by position."""
    import torch

    from ci_onnx.export import signature

    binding = signature.bind(model.forward, [s.name for s in m.inputs])
    try:
        with torch.no_grad():
            out = binding.call(model, {k: torch.tensor(v) for k, v in feeds.items()})
    except Exception:
        return None
    leaves = _leaves(out)
    names = [n for n, _ in leaves]
    if all(names) and set(m.outputs) <= set(names):
        return {n: t.numpy() for n, t in leaves if n in m.outputs}
    return {d: t.numpy() for d, (_, t) in zip(m.outputs, leaves, strict=False)}


def _leaves(out: Any, name: str = "") -> list[tuple[str, Any]]:
    import torch

    if isinstance(out, torch.Tensor):
        return [(name, out)]
    if hasattr(out, "items"):
        return [leaf for k, v in out.items() if v is not None for leaf in _leaves(v, str(k))]
    if isinstance(out, (tuple, list)):
        return [leaf for v in out for leaf in _leaves(v, "")]
    return []


def _close(a: Mapping[str, np.ndarray], b: Mapping[str, np.ndarray], tol: Any) -> bool:
    return all(a[k].shape == b[k].shape and np.allclose(a[k], b[k], tol.rtol, tol.atol) for k in a)
