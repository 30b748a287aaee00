"""The serving environment's size on disk: what coldstart reports against the files themselves."""

from __future__ import annotations

import importlib.metadata
import os
from pathlib import Path

import pytest

from ci_onnx.observer import coldstart


def test_a_distributions_size_is_the_sum_of_its_installed_files() -> None:
    dist = importlib.metadata.distribution("numpy")
    files = [Path(str(f.locate())) for f in dist.files or ()]
    expected = sum(p.stat().st_size for p in files if p.exists())
    assert expected > 1 << 20  # numpy's files: megabytes, so a zero or a stub cannot pass
    coldstart.distribution_size.cache_clear()
    assert coldstart.distribution_size("numpy") == expected


def test_the_runtime_is_the_distribution_that_provides_import_onnxruntime() -> None:
    coldstart.runtime_size.cache_clear()
    name, size = coldstart.runtime_size()
    provides = importlib.metadata.packages_distributions()["onnxruntime"]
    assert name == provides[0]
    assert size == coldstart.distribution_size(name)


def test_an_unknown_distribution_has_no_size() -> None:
    assert coldstart.distribution_size("no-such-distribution-onnx-gate") is None


def test_sizes_are_measured_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch runner serves every target of one environment: the environment is read once."""
    coldstart.distribution_size.cache_clear()
    seen: list[str] = []
    real = os.stat

    def counting(path: str) -> os.stat_result:
        seen.append(path)
        return real(path)

    monkeypatch.setattr(coldstart.os, "stat", counting)
    first = coldstart.distribution_size("numpy")
    stats = len(seen)
    assert coldstart.distribution_size("numpy") == first
    assert stats > 0 and len(seen) == stats
