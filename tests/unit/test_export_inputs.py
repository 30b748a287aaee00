"""Random inputs, dim sizes and the samples file (numpy only)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ci_onnx.contracts.bundle import TensorSpec
from ci_onnx.contracts.errors import ConfigError
from ci_onnx.export import inputs

IMAGE = TensorSpec("image", ("batch", 1, 8, 8), "float32")
IDS = TensorSpec("ids", ("batch", "seq"), "int64", (0, 100))


def test_random_inputs_are_seeded_stacked_on_batch_and_respect_dtype_and_range() -> None:
    a = inputs.random_inputs([IMAGE, IDS], 16, 0, {"seq": 12})
    b = inputs.random_inputs([IMAGE, IDS], 16, 0, {"seq": 12})
    c = inputs.random_inputs([IMAGE, IDS], 16, 1, {"seq": 12})
    assert a["image"].shape == (16, 1, 8, 8) and a["image"].dtype == np.float32
    assert a["ids"].shape == (16, 12) and a["ids"].dtype == np.int64
    assert a["ids"].min() >= 0 and a["ids"].max() < 100
    np.testing.assert_array_equal(a["image"], b["image"])
    assert not np.array_equal(a["image"], c["image"])
    assert inputs.count_of(a, [IMAGE, IDS]) == 16


def test_a_symbolic_dim_without_a_size_names_the_key() -> None:
    with pytest.raises(ConfigError, match=r"model.dim_sizes: .*'seq'.*dim_sizes: \{seq: 16\}"):
        inputs.random_inputs([IDS], 4, 0, {})


def test_samples_are_checked_by_name_shape_and_dtype(tmp_path: Path) -> None:
    path = tmp_path / "s.npz"
    np.savez(path, image=np.zeros((5, 1, 8, 8), np.float64))
    loaded = inputs.load_samples(path, [IMAGE])
    assert loaded["image"].dtype == np.float32 and loaded["image"].shape[0] == 5
    with pytest.raises(ConfigError, match=r"model.samples: .* does not exist"):
        inputs.load_samples(tmp_path / "nope.npz", [IMAGE])
    np.savez(path, picture=np.zeros((5, 1, 8, 8), np.float32))
    with pytest.raises(ConfigError, match=r"model.samples: s.npz has no array 'image' \(it has: picture\)"):
        inputs.load_samples(path, [IMAGE])
    np.savez(path, image=np.zeros((5, 8, 8), np.float32))
    with pytest.raises(ConfigError, match=r"shape \[5, 8, 8\], but model.inputs.image declares"):
        inputs.load_samples(path, [IMAGE])
    np.savez(path, ids=np.zeros((5, 3), np.float32))
    with pytest.raises(ConfigError, match=r"is float32, but model.inputs.ids declares int64"):
        inputs.load_samples(path, [IDS])
