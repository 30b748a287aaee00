"""Inputs in, outputs out: reading a bundle's test data, running it, writing what came back.

Inputs are never sliced by a guessed batch dimension. Only where every input carries the one batch
symbol (bundle.batch_symbol: on axis 0, or on the axis each input carries it) are samples taken
along it: to serve batch sizes, and to run a stacked test data set on a model whose
file froze that axis (in chunks of the frozen size, so parity is still judged).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ci_onnx.contracts.bundle import Manifest, TensorSpec, batch_axis, batch_symbol
from ci_onnx.contracts.tensorproto import Tensor
from ci_onnx.observer import values

Values = dict[str, Any]


def read_inputs(manifest: Manifest, bundle: Path, directory: str) -> Values:
    """Each input of a test data set, decoded by its declared type (a Tensor, list, dict or None)."""
    return {
        spec.name: values.loads((bundle / directory / f"input_{i}.pb").read_bytes(), spec.dtype)
        for i, spec in enumerate(manifest.inputs)
    }


def served_sizes(bundle: Path) -> list[int]:
    """The batch sizes a runner serves the bundle at (:func:`served`)."""
    from ci_onnx.contracts.bundle import read_manifest

    return served(read_manifest(bundle, verify_hashes=False))


def served(manifest: Manifest) -> list[int]:
    """The batch sizes a runner serves and times, ascending: the declared ones where the inputs have a
    batch axis; the model's own size where its batch axis is fixed (:func:`fixed_size`), whatever
    batch_sizes says, so a fixed-shape model is still timed; else none."""
    if not batch_axis_problem(manifest):
        return sorted(manifest.batch_sizes)
    fixed = fixed_size(manifest)
    return [fixed] if fixed else []


def fixed_size(manifest: Manifest) -> int | None:
    """The batch a fixed-shape model serves: every input a tensor whose axis 0 is one number, declared
    dynamic nowhere, and every output's axis 0 that same number; None otherwise."""
    found = set()
    for spec in manifest.inputs:
        if values.kind(spec.dtype) != "tensor" or not spec.shape or not isinstance(spec.shape[0], int):
            return None
        if "0" in manifest.dynamic_axes.get(spec.name, {}):
            return None
        found.add(spec.shape[0])
    if len(found) != 1:
        return None
    n = found.pop()
    for out in manifest.outputs:
        if values.kind(out.dtype) == "tensor" and (not out.shape or out.shape[0] != n):
            return None
    return n if n > 0 else None


def batch_axis_problem(manifest: Manifest) -> str:
    """Why the inputs have no batch axis to serve other batch sizes on; "" when they have one.

    A batch axis is the axis of each input that carries the batch symbol (bundle.batch_symbol: axis
    0 of every input where that is one symbol, else the one symbol every input carries once, as a
    seq-first RNN's ``x`` and ``h0`` carry it on axis 1).
    """
    if not manifest.inputs:
        return "the model has no inputs, so it has no batch axis"
    for spec in manifest.inputs:
        if values.kind(spec.dtype) != "tensor":
            return f"input {spec.name!r} is a {values.kind(spec.dtype)}, not a tensor with a batch axis"
        if not spec.shape:
            return f"input {spec.name!r} is 0-d, so it has no batch axis"
    if batch_symbol(manifest.inputs, manifest.dynamic_axes):
        return ""
    for spec in manifest.inputs:
        declared = "0" in manifest.dynamic_axes.get(spec.name, {})
        if isinstance(spec.shape[0], int) and not declared:
            return (
                f"the batch axis of input {spec.name!r} is fixed at {spec.shape[0]} in the model; "
                "export it with a dynamic batch axis (dynamic_axes) to check other batch sizes"
            )
    names = {str(s.shape[0]) for s in manifest.inputs}
    return (
        f"the inputs' first axes are different dims ({', '.join(sorted(names))}), and no symbol named "
        "like a batch (batch, batch_size, n, …) is on every input, so there is no one batch axis"
    )


def batch_symbols(manifest: Manifest) -> set[str]:
    """The name the inputs give their batch axis (bundle.batch_symbol), as a set: empty where none."""
    symbol = batch_symbol(manifest.inputs, manifest.dynamic_axes)
    return {symbol} if symbol else set()


def input_axes(manifest: Manifest) -> dict[str, int]:
    """Each input's batch axis (empty where the inputs have none: :func:`batch_axis_problem`)."""
    symbol = batch_symbol(manifest.inputs, manifest.dynamic_axes)
    found = {s.name: batch_axis(s, symbol, manifest.dynamic_axes) for s in manifest.inputs}
    return {k: v for k, v in found.items() if v is not None}


def output_axes(manifest: Manifest) -> dict[str, int]:
    """The outputs that carry the inputs' batch symbol on exactly one axis, and that axis.

    Only these can be compared between one run of batch n and n single runs; an output without it
    (a 0-d loss, a statistic over the whole batch, a dynamic axis of its own such as the
    ``n_selected`` of a nonzero or masked_select), or with it on two axes (a similarity matrix
    ``[batch, batch]``), depends on the batch as a whole and is compared whole.
    """
    symbol = batch_symbol(manifest.inputs, manifest.dynamic_axes)
    out = {}
    for spec in manifest.outputs:
        if values.kind(spec.dtype) != "tensor" or not spec.shape:
            continue
        axis = batch_axis(spec, symbol, manifest.dynamic_axes)
        if axis is not None:
            out[spec.name] = axis
    return out


def batched_outputs(manifest: Manifest) -> tuple[str, ...]:
    """The names of :func:`output_axes`, in the manifest's order."""
    return tuple(output_axes(manifest))


def on_axis_0(manifest: Manifest) -> bool:
    """Whether every batch axis is axis 0: what a runner that splits and stacks on axis 0 only can serve."""
    return all(a == 0 for a in (*input_axes(manifest).values(), *output_axes(manifest).values()))


def fixed_batch(sess: Any, axes: Mapping[str, int] | None = None) -> dict[str, int]:
    """Inputs whose batch axis (``axes``; axis 0 of every input where it is None) is a fixed number in
    the model file."""
    out = {}
    for i in sess.get_inputs():
        axis = 0 if axes is None else axes.get(i.name)
        if axis is not None and len(i.shape or ()) > axis and isinstance(i.shape[axis], int):
            out[i.name] = i.shape[axis]
    return out


def run_set(sess: Any, manifest: Manifest, feeds: Values) -> Values:
    """One test data set: in one run, or in chunks of a frozen batch axis the manifest declares."""
    fixed = set(fixed_batch(sess).values())
    counts = {v.array.shape[0] for v in feeds.values() if isinstance(v, Tensor) and v.array.ndim}
    if batch_axis_problem(manifest) or not on_axis_0(manifest) or len(fixed) != 1 or len(counts) != 1:
        return run(sess, feeds)
    chunk, count = fixed.pop(), counts.pop()
    if chunk <= 0 or chunk >= count or count % chunk:
        return run(sess, feeds)
    parts = [run(sess, _slice(feeds, i, i + chunk)) for i in range(0, count, chunk)]
    out: Values = {}
    for name, first_part in parts[0].items():
        if not isinstance(first_part, Tensor) or not first_part.array.ndim:
            return run(sess, feeds)  # not a batched output: let the runtime say what is wrong
        stacked = np.concatenate([p[name].array for p in parts])
        out[name] = Tensor(first_part.name, first_part.data_type, stacked)
    return out


def _slice(feeds: Values, start: int, stop: int, axes: Mapping[str, int] | None = None) -> Values:
    out: Values = {}
    for k, v in feeds.items():
        axis = (axes or {}).get(k, 0)
        index = (slice(None),) * axis + (slice(start, stop),)
        out[k] = Tensor(v.name, v.data_type, v.array[index])
    return out


def first(feeds: Values, n: int, axes: Mapping[str, int] | None = None) -> Values:
    """The first ``n`` samples along each input's batch axis (``axes``; axis 0 where it names none),
    cycling when the set holds fewer."""
    out: Values = {}
    for k, v in feeds.items():
        arr = v.array if isinstance(v, Tensor) else np.asarray(v)
        axis = (axes or {}).get(k, 0)
        taken = np.take(arr, np.arange(n) % arr.shape[axis], axis=axis) if arr.shape[axis] else arr
        out[k] = Tensor(v.name, v.data_type, taken) if isinstance(v, Tensor) else taken
    return out


def sample(feeds: Values, i: int, axes: Mapping[str, int] | None = None) -> Values:
    return _slice(feeds, i, i + 1, axes)


def run(sess: Any, feeds: Values) -> Values:
    """One run; outputs as Tensors (lists, dicts, None for sequences, maps, empty optionals)."""
    engine_run = getattr(sess, "run_values", None)
    if engine_run is not None:  # a session of another engine (ci_onnx.observer.engine)
        ran: Values = engine_run(feeds)
        return ran
    import onnxruntime as ort

    outs = sess.get_outputs()
    names = [o.name for o in outs]
    types = [o.type for o in outs]
    if values.needs_ort_values(types):
        ins = {k: _as_ortvalue(values.to_feed(v, ort), ort) for k, v in feeds.items()}
        got = [values.from_ortvalue(v) for v in sess.run_with_ort_values(names, ins)]
        return dict(zip(names, got, strict=True))
    got = sess.run(names, {k: values.to_feed(v, ort) for k, v in feeds.items()})
    return {n: values.from_output(g, t) for n, g, t in zip(names, got, types, strict=True)}


def _as_ortvalue(feed: Any, ort: Any) -> Any:
    return feed if isinstance(feed, ort.OrtValue) else ort.OrtValue.ortvalue_from_numpy(np.asarray(feed))


def save(out: Path, directory: str, manifest: Manifest, outputs: Values) -> dict[str, str]:
    (out / directory).mkdir(parents=True, exist_ok=True)
    files = {}
    for i, spec in enumerate(manifest.outputs):
        if spec.name in outputs:
            rel = f"{directory}/output_{i}.pb"
            (out / rel).write_bytes(values.dumps(outputs[spec.name], _type_of(spec), spec.name))
            files[spec.name] = rel
    return files


def _type_of(spec: TensorSpec) -> str:
    return spec.dtype or "float32"
