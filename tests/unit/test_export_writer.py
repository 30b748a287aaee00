"""The bundle writer: 0-d tensors keep shape [], and figures stay JSON whatever they hold."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
from onnx import load_tensor, numpy_helper

from ci_onnx.export import writer


def test_a_0d_output_is_written_with_shape_empty(tmp_path: Path) -> None:
    loss = np.float32(0.25).reshape(())
    directory = writer.write_set(tmp_path, 0, {"x": np.ones((2, 3), np.float32)}, {"loss": loss})
    tensor = load_tensor(str(tmp_path / directory / "output_0.pb"))
    assert list(tensor.dims) == []
    assert numpy_helper.to_array(tensor).shape == ()


def test_non_finite_figures_are_encoded_not_a_crash() -> None:
    figures = {"max_abs": math.inf, "nested": [{"v": np.float64(-np.inf)}, np.nan], "n": np.int64(3)}
    safe = writer.json_safe(figures)
    assert safe == {"max_abs": "Infinity", "nested": [{"v": "-Infinity"}, "NaN"], "n": 3}
    json.dumps(safe, allow_nan=False)
