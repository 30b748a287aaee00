"""Real samples (model.samples) that are truncated, forged or of the wrong kind: a ConfigError naming
the key, never a traceback and never a silent cast."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ci_onnx.contracts.bundle import TensorSpec
from ci_onnx.contracts.errors import ConfigError
from ci_onnx.export.inputs import load_samples

SPEC = (TensorSpec("x", ("batch", 8), "float32"),)


def _npz(tmp: Path, **arrays: np.ndarray) -> Path:
    path = tmp / "samples.npz"
    np.savez(path, **arrays)  # type: ignore[arg-type]
    return path


@pytest.mark.parametrize("keep", [0, 10, 100, 0.5, 0.9])
def test_a_truncated_npz_is_a_config_error(tmp_path: Path, keep: float) -> None:
    path = _npz(tmp_path, x=np.zeros((4, 8), np.float32))
    raw = path.read_bytes()
    path.write_bytes(raw[: int(len(raw) * keep) if isinstance(keep, float) else keep])
    with pytest.raises(ConfigError, match=r"model\.samples: .*samples\.npz is not a readable \.npz"):
        load_samples(path, SPEC)


def test_a_forged_npz_is_a_config_error(tmp_path: Path) -> None:
    path = _npz(tmp_path, x=np.zeros((4, 8), np.float32))
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2 : len(raw) // 2 + 8] = b"\xff" * 8
    path.write_bytes(bytes(raw))
    try:
        load_samples(path, SPEC)
    except ConfigError as exc:
        assert exc.message.startswith("model.samples")


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8, np.bool_, np.complex64])
def test_samples_of_another_kind_are_refused_not_cast(tmp_path: Path, dtype: type) -> None:
    path = _npz(tmp_path, x=np.ones((4, 8), dtype))
    with pytest.raises(ConfigError, match=r"model\.inputs\.x declares float32"):
        load_samples(path, SPEC)


def test_float64_samples_for_a_float32_input_are_still_taken(tmp_path: Path) -> None:
    got = load_samples(_npz(tmp_path, x=np.ones((4, 8), np.float64)), SPEC)
    assert got["x"].dtype == np.float32
