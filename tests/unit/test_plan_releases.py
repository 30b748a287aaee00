"""Releases are checked against the index when the plan is made, not when a verify job meets them."""

from __future__ import annotations

import dataclasses

import pytest

from ci_onnx import config
from ci_onnx import plan as planning
from ci_onnx.contracts.errors import ConfigError
from tests.conftest import EXAMPLE_CONFIG, FakeIndex

BASE = config.load(EXAMPLE_CONFIG)


def _config(runtimes: tuple[str, ...], providers: tuple[str, ...], **targets: object) -> config.Config:
    t = dataclasses.replace(
        BASE.targets, runtimes=runtimes, providers=providers, **{"exclude": (), **targets}
    )
    return dataclasses.replace(BASE, targets=t)


def test_an_exact_release_the_index_lacks_is_a_config_error_naming_the_nearest(fake_index: FakeIndex) -> None:
    with pytest.raises(ConfigError) as info:
        planning.expand(_config(("1.20.1",), ("cpu", "openvino")), fake_index)
    message = info.value.message
    assert "onnxruntime-openvino has no release 1.20.1" in message
    assert "nearest: 1.20.0, 1.23.0, 1.24.1" in message and "targets.exclude" in message
    with pytest.raises(
        ConfigError, match=r"onnxruntime has no release 9\.9\.9 .*nearest: 1\.31\.1, 1\.32\.0"
    ):
        planning.expand(_config(("9.9.9",), ("cpu",)), fake_index)


def test_an_excluded_or_too_old_cell_needs_no_release(fake_index: FakeIndex) -> None:
    excluded = _config(
        ("1.20.1",), ("cpu", "openvino"), exclude=({"runtime": "1.20.1", "provider": "openvino"},)
    )
    assert {t.provider for t in planning.expand(excluded, fake_index).targets} == {"cpu"}
    old = planning.expand(_config(("1.16.3",), ("cpu", "openvino")), fake_index)
    assert all("oldest is 1.17" in t.expected_skip for t in old.targets if t.provider == "openvino")


def test_an_included_exact_release_is_checked_too(fake_index: FakeIndex) -> None:
    cell = {"runtime": "1.24.2", "provider": "cpu", "opset": "17", "exporter": "dynamo"}
    with pytest.raises(
        ConfigError,
        match=r"include\[0\]\.runtime: onnxruntime has no release 1\.24\.2 .*nearest: 1\.17\.3, 1\.20\.1, 1\.24\.3",
    ):
        planning.expand(_config(("1.32.0",), ("cpu",), include=(cell,)), fake_index)


def test_a_wildcard_matching_nothing_for_one_provider_stays_an_expected_skip(fake_index: FakeIndex) -> None:
    plan = planning.expand(_config(("1.31.*",), ("cpu", "openvino")), fake_index)
    skips = {t.provider: t.expected_skip for t in plan.targets}
    assert skips["cpu"] == ""
    assert skips["openvino"] == "onnxruntime-openvino has no release matching 1.31.*"


def test_an_index_that_cannot_be_listed_leaves_exact_releases_as_written() -> None:
    from ci_onnx.contracts.errors import EnvironmentProblem

    class Offline:
        def versions(self, package: str, *, pre: bool = False) -> list[str]:
            raise EnvironmentProblem("no index here")

    plan = planning.expand(_config(("1.20.1",), ("cpu",)), Offline())
    assert {t.runtime for t in plan.targets} == {"1.20.1"}
