from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
EXAMPLE_CONFIG = REPO / "examples" / "tinycnn" / "onnx-gate.yml"
DIGITNET_MODEL = f"""\
model:
  name: digitnet
  factory: {EXAMPLE_CONFIG.parent}/model.py:build
  inputs: {{image: {{shape: [batch, 1, 8, 8]}}}}
  outputs: [logits]
  dynamic_axes: {{image: {{0: batch}}, logits: {{0: batch}}}}
  samples: {EXAMPLE_CONFIG.parent}/samples.npz
"""
"""The example's ``model:`` block with absolute paths, for end-to-end configs written to a temp dir."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``@pytest.mark.browser`` tests need Chromium, found as the web runner finds it. Without one they
    are skipped with the reason, except in CI (``CI=true``), where the project's setup installs it and
    a missing browser must not pass as a skip: there they run and fail, saying why."""
    import os

    from ci_onnx.contracts.errors import GateError
    from ci_onnx.runners import web

    marked = [item for item in items if item.get_closest_marker("browser")]
    if not marked or os.environ.get("CI") == "true":
        return
    try:
        web.chromium(os.environ)
    except GateError as exc:
        skip = pytest.mark.skip(reason=f"needs Chromium: {exc.message}")
        for item in marked:
            item.add_marker(skip)


class FakeIndex:
    """A Resolver with a fixed release list per package, newest first."""

    def __init__(self, releases: dict[str, list[str]]) -> None:
        self.releases = releases
        self.asked: list[str] = []

    def versions(self, package: str, *, pre: bool = False) -> list[str]:
        self.asked.append(package)
        found = self.releases.get(package, [])
        return found if pre else [v for v in found if "dev" not in v and "rc" not in v]


@pytest.fixture
def fake_index() -> FakeIndex:
    return FakeIndex(
        {
            "onnxruntime": ["1.32.0", "1.31.1", "1.24.4", "1.24.3", "1.20.1", "1.17.3", "1.16.3"],
            "onnxruntime-openvino": ["1.24.1", "1.23.0", "1.20.0"],
            "onnxruntime-gpu": ["1.31.1", "1.24.4"],
        }
    )


@pytest.fixture(scope="session")
def env_cache(request: pytest.FixtureRequest) -> Path:
    """Runtime environments, built once and kept in pytest's cache directory across runs and tests."""
    return Path(request.config.cache.mkdir("onnx-gate-envs"))


@pytest.fixture(scope="session", autouse=True)
def _ctrl_c_ends_children() -> Iterator[None]:
    """Ctrl-C stops the run at once with every child onnx-gate started, also where a test calls the
    library directly (through the CLI, the CLI does the same): the children run in sessions of their
    own and never see the terminal's SIGINT (tests/unit/test_interrupt.py)."""
    from ci_onnx.contracts import proc

    with proc.interruptible():
        yield
