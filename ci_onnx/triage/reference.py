"""onnx's ReferenceEvaluator on the graph, with every intermediate value: what the graph says, computed
by the ONNX specification's own reference implementation (numpy), no runtime involved."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np


class ReferenceError_(Exception):
    """The reference cannot run this graph (an op it does not implement, a contrib domain)."""


def intermediates(model: Any, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every value of the main graph (inputs, initializers, node outputs) as the reference computes it."""
    from onnx.reference import ReferenceEvaluator

    try:
        ref = ReferenceEvaluator(model)
        got: Any = ref.run(None, dict(feeds), intermediate=True)
    except Exception as exc:
        text = " ".join(str(exc).split())[:300]
        raise ReferenceError_(
            f"onnx's ReferenceEvaluator cannot run the graph ({type(exc).__name__}: {text})"
        ) from None
    return {
        k: np.asarray(v) for k, v in got.items() if k and v is not None and not isinstance(v, (list, dict))
    }
