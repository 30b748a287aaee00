"""ONNX-only without test data: seeded random inputs, and onnxruntime's own unoptimised CPU run of
the file as their reference.

A model exported elsewhere comes with no torch to compare against. Its test data (the ONNX layout)
are the best reference; without them the gate draws ``verify.random_inputs`` inputs from the graph's
own input types (ranges and sizes from ``model.inputs`` and ``model.dim_sizes``) and records what
onnxruntime's CPU provider computes with every graph optimization off. Each target is then judged
against that: a runtime release, a provider or an optimization level that changes the numbers fails,
which is what such a gate can prove without the training code. What it cannot prove (that the file
computes what the model it came from computed) is said in the bundle's ``reference-parity`` finding.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ci_onnx.config import Config
from ci_onnx.contracts.bundle import TensorSpec
from ci_onnx.contracts.errors import ConfigError
from ci_onnx.export import inputs

Arrays = dict[str, np.ndarray]

DRAWABLE = frozenset(
    {"float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
     "uint64", "bool"}
)  # fmt: skip
"""Element types the random inputs are drawn in (numpy's own); others need model.test_data."""


def drawable_specs(cfg: Config, graph_inputs: Sequence[TensorSpec]) -> list[TensorSpec]:
    """The graph's inputs as specs to draw from: its shapes and types, ``model.inputs``' ranges."""
    declared = {s.name: s for s in cfg.model.inputs}
    specs = []
    for spec in graph_inputs:
        if spec.dtype not in DRAWABLE:
            raise ConfigError(
                f"model.test_data: input {spec.name!r} is {spec.dtype}, which random inputs cannot be "
                "drawn in; give test data in the ONNX layout (test_data_set_0/input_0.pb …)"
            )
        value_range = declared[spec.name].value_range if spec.name in declared else None
        if spec.dtype.startswith(("int", "uint")) and value_range is None:
            raise ConfigError(
                f"model.inputs.{spec.name}.range: without model.test_data the inputs are drawn at "
                f"random, and the integer input {spec.name!r} needs `range: [low, high)` (high excluded; "
                "token ids: [0, vocab_size))"
            )
        specs.append(TensorSpec(spec.name, spec.shape, spec.dtype, value_range))
    return specs


def random_set(cfg: Config, model: Path, graph_inputs: Sequence[TensorSpec]) -> tuple[Arrays, Arrays, str]:
    """(inputs, onnxruntime's outputs on them, its version): the bundle's test_data_set_0."""
    specs = drawable_specs(cfg, graph_inputs)
    feeds = inputs.random_inputs(specs, cfg.verify.random_inputs, cfg.verify.seed, cfg.model.dim_sizes)
    import onnxruntime as ort

    try:
        refs = unoptimized(model)(feeds)
    except ConfigError:
        raise
    except Exception as exc:  # onnxruntime's own message: the reason there is no reference
        text = " ".join(str(exc).split())[:300]
        raise ConfigError(
            f"model.test_data: without it the reference is onnxruntime {ort.__version__}'s CPU run, which "
            f"failed on random inputs ({text}); give test data in the ONNX layout"
        ) from None
    return feeds, refs, ort.__version__


def unoptimized(model: Path) -> Callable[[Mapping[str, Any]], Arrays]:
    """onnxruntime's CPU run of ``model`` with every graph optimization off: the ONNX-only reference
    (of the random set, and of every sweep point)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]

    def run(feeds: Mapping[str, Any]) -> Arrays:
        refs: Arrays = {}
        for name, value in zip(names, session.run(names, dict(feeds)), strict=True):
            if not isinstance(value, np.ndarray):
                raise ConfigError(
                    f"model.test_data: output {name!r} is a {type(value).__name__}, not a tensor; give "
                    "test data in the ONNX layout"
                )
            refs[name] = value
        return refs

    return run
