"""Runtime specs resolved against a real package index protocol, served on loopback."""

from __future__ import annotations

import pytest

from ci_onnx.contracts.errors import ConfigError, EnvironmentProblem
from ci_onnx.host.resolve import PipIndex, releases_between, resolve, resolve_all
from tests.conftest import FakeIndex
from tests.support import pypi

RELEASES = ["1.15.1", "1.17.3", "1.20.0", "1.20.1", "1.24.3", "1.24.4", "1.32.0"]


@pytest.fixture(scope="module")
def index_url():  # type: ignore[no-untyped-def]
    files = {
        "onnxruntime": [pypi.wheel_name("onnxruntime", v) for v in RELEASES]
        + [
            pypi.wheel_name("onnxruntime", "1.33.0.dev20261128001"),
            pypi.wheel_name("onnxruntime", "1.99.0", tag="cp27-cp27mu-manylinux1_x86_64"),
            "onnxruntime-1.31.0.tar.gz",
        ],
    }
    with pypi.serve(files) as url:
        yield url


def test_pip_index_lists_final_releases_this_python_can_install(index_url: str) -> None:
    index = PipIndex(env=pypi.pip_env(index_url))
    assert index.versions("onnxruntime") == ["1.32.0", "1.31.0", *RELEASES[::-1][1:]]
    assert resolve("latest", "onnxruntime", index) == "1.32.0"
    assert resolve("1.24.*", "onnxruntime", index) == "1.24.4"
    assert resolve("1.20", "onnxruntime", index) == "1.20.1"
    assert resolve_all("latest-3", "onnxruntime", index) == ["1.32.0", "1.31.0", "1.24.4"]


def test_nightly_takes_the_newest_pre_release(index_url: str) -> None:
    index = PipIndex(env=pypi.pip_env(index_url))
    assert resolve("nightly", "onnxruntime", index) == "1.33.0.dev20261128001"
    assert "1.33.0.dev20261128001" not in index.versions("onnxruntime")


def test_an_index_that_does_not_answer_is_an_environment_problem(index_url: str) -> None:
    index = PipIndex(env=pypi.pip_env(index_url))
    with pytest.raises(EnvironmentProblem, match="could not list the releases of no-such-package"):
        index.versions("no-such-package")


def test_exact_versions_never_ask_the_index() -> None:
    fake = FakeIndex({})
    assert resolve("1.20.1", "onnxruntime", fake) == "1.20.1"
    assert fake.asked == []


def test_a_spec_matching_nothing_names_the_newest_releases() -> None:
    with pytest.raises(
        ConfigError, match=r"'1\.99\.\*' matches no release of onnxruntime .*newest: 1\.32\.0, 1\.24\.4"
    ):
        resolve("1.99.*", "onnxruntime", FakeIndex({"onnxruntime": ["1.32.0", "1.24.4"]}))


def test_releases_between_good_and_bad_for_bisecting() -> None:
    fake = FakeIndex({"onnxruntime": RELEASES[::-1]})
    assert releases_between("1.17.3", "1.24.4", "onnxruntime", fake) == [
        "1.20.0",
        "1.20.1",
        "1.24.3",
        "1.24.4",
    ]
