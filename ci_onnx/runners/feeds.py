"""Inputs in, outputs out: reading a bundle's test data, running it, writing what came back.

Inputs are never sliced by a guessed batch dimension: a test data set runs as it is. Batch sizes are
served only where every input's axis 0 is one dynamic or declared batch axis (:func:`batch_axis_problem`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ci_onnx.bundle import Manifest, TensorSpec
from ci_onnx.runners import values
from ci_onnx.tensorproto import Tensor

Values = dict[str, Any]


def read_inputs(manifest: Manifest, bundle: Path, directory: str) -> Values:
    """Each input of a test data set, decoded by its declared type (a Tensor, list, dict or None)."""
    return {
        spec.name: values.loads((bundle / directory / f"input_{i}.pb").read_bytes(), spec.dtype)
        for i, spec in enumerate(manifest.inputs)
    }


def batch_axis_problem(manifest: Manifest) -> str:
    """Why the inputs have no batch axis to serve other batch sizes on; "" when they have one.

    A batch axis is axis 0 of every input, dynamic (a symbolic dim) or declared in dynamic_axes.
    """
    if not manifest.inputs:
        return "the model has no inputs, so it has no batch axis"
    for spec in manifest.inputs:
        if values.kind(spec.dtype) != "tensor":
            return f"input {spec.name!r} is a {values.kind(spec.dtype)}, not a tensor with a batch axis"
        if not spec.shape:
            return f"input {spec.name!r} is 0-d, so it has no batch axis"
        declared = "0" in manifest.dynamic_axes.get(spec.name, {})
        if isinstance(spec.shape[0], int) and not declared:
            return (
                f"the batch axis of input {spec.name!r} is fixed at {spec.shape[0]} in the model; "
                "export it with a dynamic batch axis (dynamic_axes) to check other batch sizes"
            )
    names = {str(s.shape[0]) for s in manifest.inputs}
    if len(names) > 1:
        return f"the inputs' first axes are different dims ({', '.join(sorted(names))}), not one batch axis"
    return ""


def first(feeds: Values, n: int) -> Values:
    """The first ``n`` samples along the batch axis (cycling when the set holds fewer)."""
    out: Values = {}
    for k, v in feeds.items():
        arr = v.array if isinstance(v, Tensor) else np.asarray(v)
        taken = np.take(arr, np.arange(n) % arr.shape[0], axis=0) if arr.shape[0] else arr
        out[k] = Tensor(v.name, v.data_type, taken) if isinstance(v, Tensor) else taken
    return out


def sample(feeds: Values, i: int) -> Values:
    return {
        k: Tensor(v.name, v.data_type, v.array[i : i + 1]) if isinstance(v, Tensor) else v[i : i + 1]
        for k, v in feeds.items()
    }


def run(sess: Any, feeds: Values) -> Values:
    """One run; outputs as Tensors (lists, dicts, None for sequences, maps, empty optionals)."""
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
