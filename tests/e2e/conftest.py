from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def env_cache(request: pytest.FixtureRequest) -> Path:
    """Runtime environments, built once and kept in pytest's cache directory across runs and tests."""
    return Path(request.config.cache.mkdir("onnx-gate-envs"))
