"""Inputs from the declared specs: seeded random ones, the export example, and the real samples.

Symbolic dims take their size from ``model.dim_sizes``; the batch symbol (bundle.batch_symbol: on
axis 0, or wherever every input carries it) takes the number of inputs asked for, on every input.
All of it is numpy: torch tensors are made from these arrays.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ci_onnx.contracts.bundle import TensorSpec, batch_axis, batch_symbol
from ci_onnx.contracts.errors import ConfigError

if TYPE_CHECKING:
    from ci_onnx.config import Config

Arrays = dict[str, npt.NDArray[np.generic]]

EXAMPLE_BATCH = 2
"""torch.export specialises a dim whose example size is 0 or 1, so the export example uses 2."""


def batch_axes(specs: Sequence[TensorSpec]) -> dict[str, int]:
    """Each input's batch axis: where it carries the batch symbol (bundle.batch_symbol: axis 0 of
    every input, or the one batch-named symbol every input carries, as a seq-first RNN's ``x`` and
    ``h0`` do on axis 1). Inputs are stacked on it."""
    symbol = batch_symbol(specs)
    return {s.name: a for s in specs if (a := batch_axis(s, symbol)) is not None}


def concrete_shape(
    spec: TensorSpec,
    batch: int,
    dim_sizes: Mapping[str, int],
    *,
    symbol: str | None = None,
    where: str = "model.dim_sizes",
) -> tuple[int, ...]:
    """``spec``'s shape with ``batch`` for the batch ``symbol`` wherever it lies and ``dim_sizes`` for
    every other symbol: one size per symbol, on every axis of every input. Without a batch symbol
    (None or ""), a symbolic axis 0 that dim_sizes does not size takes ``batch``."""
    shape: list[int] = []
    for axis, dim in enumerate(spec.shape):
        if isinstance(dim, int):
            shape.append(dim)
        elif dim == symbol or (not symbol and axis == 0 and dim not in dim_sizes):
            # no batch symbol all inputs share (a: [M, 3], b: [N, 3]): each one's axis 0 is drawn
            # at the count asked for, as samples, unless dim_sizes sizes it
            shape.append(batch)
        elif dim in dim_sizes:
            shape.append(int(dim_sizes[dim]))
        else:
            raise ConfigError(
                f"{where}: input {spec.name!r} has the symbolic dim {dim!r} at axis {axis}; give it a size "
                f"for the example and random inputs, e.g. `dim_sizes: {{{dim}: 16}}`"
            )
    return tuple(shape)


def random_inputs(specs: Sequence[TensorSpec], count: int, seed: int, dim_sizes: Mapping[str, int]) -> Arrays:
    """``count`` seeded random inputs stacked on the batch axis, wherever each input carries it (a
    fixed dim stays as declared)."""
    rng = np.random.default_rng(seed)
    symbol = batch_symbol(specs)
    out: Arrays = {}
    for spec in specs:
        shape = concrete_shape(spec, count, dim_sizes, symbol=symbol)
        out[spec.name] = _draw(rng, spec, shape)
    return out


def _draw(rng: np.random.Generator, spec: TensorSpec, shape: tuple[int, ...]) -> npt.NDArray[np.generic]:
    dtype = np.dtype(spec.dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if dtype.kind in "iu":
        assert spec.value_range is not None, "config guarantees a range for integer inputs"
        low, high = int(spec.value_range[0]), int(spec.value_range[1])
        return rng.integers(low, high, size=shape).astype(dtype)
    if spec.value_range is not None:
        low_f, high_f = spec.value_range
        return rng.uniform(low_f, high_f, size=shape).astype(dtype)
    return rng.standard_normal(size=shape).astype(dtype)


def load_samples(path: Path, specs: Sequence[TensorSpec], key: str = "model.samples") -> Arrays:
    """Read the real samples: one array per input, batch on axis 0, shapes as declared."""
    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in npz.files}
    except FileNotFoundError:
        raise ConfigError(
            f"{key}: {path} does not exist; give the path of an .npz relative to the config"
        ) from None
    except Exception as exc:  # a truncated or forged file: BadZipFile, EOFError, zlib.error, …
        text = " ".join(str(exc).split())[:200] or type(exc).__name__
        raise ConfigError(
            f"{key}: {path} is not a readable .npz ({text}); save it with numpy.savez"
        ) from None
    out: Arrays = {}
    counts = set()
    axes = batch_axes(specs)
    for spec in specs:
        if spec.name not in arrays:
            raise ConfigError(
                f"{key}: {path.name} has no array {spec.name!r} (it has: {', '.join(arrays) or 'none'}); "
                "save one array per input name"
            )
        arr = arrays[spec.name]
        if not _fits(arr.shape, spec.shape):
            raise ConfigError(
                f"{key}: array {spec.name!r} in {path.name} has shape {list(arr.shape)}, but "
                f"model.inputs.{spec.name} declares {list(spec.shape)}"
            )
        want = np.dtype(spec.dtype)
        same_kind = arr.dtype.kind == want.kind or {arr.dtype.kind, want.kind} <= {"i", "u"}
        if arr.dtype != want and not (same_kind and np.can_cast(arr.dtype, want, casting="same_kind")):
            raise ConfigError(
                f"{key}: array {spec.name!r} in {path.name} is {arr.dtype}, but model.inputs.{spec.name} "
                f"declares {spec.dtype}; save the samples as {spec.dtype}"
            )
        out[spec.name] = arr.astype(want, copy=False)
        if spec.name in axes:
            counts.add(arr.shape[axes[spec.name]])
    if len(counts) > 1:
        raise ConfigError(
            f"{key}: the arrays in {path.name} hold different numbers of samples ({sorted(counts)})"
        )
    return out


def _fits(actual: tuple[int, ...], declared: Sequence[int | str]) -> bool:
    return len(actual) == len(declared) and all(
        isinstance(d, str) or d == a for a, d in zip(actual, declared, strict=True)
    )


def count_of(arrays: Mapping[str, npt.NDArray[np.generic]], specs: Sequence[TensorSpec]) -> int:
    for name, axis in batch_axes(specs).items():
        return int(arrays[name].shape[axis])
    return 1


def labels_of(cfg: Config, samples: Mapping[str, np.ndarray] | None) -> dict[str, np.ndarray]:
    """The labels of ``model.samples`` (already loaded as ``samples``), checked against the config."""
    from ci_onnx.contracts.labels import load_labels

    m = cfg.model
    if not samples or not m.samples:
        return {}
    decision = cfg.verify.decision.output if cfg.verify.decision else None
    key = f"{cfg.path}: model.samples"
    return load_labels(cfg.resolve(m.samples), m.outputs, decision, count_of(samples, m.inputs), key)
