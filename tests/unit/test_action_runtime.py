"""The verify step swaps the environment's onnxruntime for exactly the target's runtime."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ci_onnx.action import runtime
from ci_onnx.contracts.errors import UsageError


def _installed(**versions: str) -> Callable[[str], str]:
    return lambda package: versions.get(package, "")


def test_nothing_changes_when_the_target_runtime_is_already_the_only_one() -> None:
    change = runtime.plan_change("ort1.32.0-cpu-op17-dynamo", _installed(onnxruntime="1.32.0"))
    assert not change.needed


def test_another_version_is_replaced() -> None:
    change = runtime.plan_change("ort1.20.1-cpu-op17-dynamo", _installed(onnxruntime="1.32.0"))
    assert change.uninstall == ()
    assert change.requirements == ("onnxruntime==1.20.1",)


def test_releases_built_against_numpy_1_get_numpy_below_2() -> None:
    change = runtime.plan_change("ort1.17.3-cpu-op17-dynamo", _installed(onnxruntime="1.32.0"))
    assert change.requirements == ("onnxruntime==1.17.3", "numpy<2")


def test_another_flavour_is_uninstalled_first() -> None:
    change = runtime.plan_change("ort1.24.1-openvino-op17-dynamo", _installed(onnxruntime="1.32.0"))
    assert change.uninstall == ("onnxruntime",)
    assert change.requirements == ("onnxruntime-openvino==1.24.1",)


def test_right_version_with_a_second_flavour_still_changes() -> None:
    both = _installed(onnxruntime="1.32.0", **{"onnxruntime-openvino": "1.24.1"})
    change = runtime.plan_change("ort1.32.0-cpu-op17-dynamo", both)
    assert change.uninstall == ("onnxruntime-openvino",)


def test_flavours_come_from_the_provider_table() -> None:
    assert {"onnxruntime", "onnxruntime-openvino", "onnxruntime-gpu"} <= set(runtime.flavours())


@pytest.mark.parametrize("bad", ["not-a-target", "ort1.20.1-nosuch-op17-dynamo"])
def test_a_bad_target_is_a_usage_error(bad: str) -> None:
    with pytest.raises(UsageError):
        runtime.plan_change(bad, _installed())


def test_one_verify_job_installs_the_one_runtime_its_targets_share() -> None:
    ids = ["ort1.20.1-cpu-op17-dynamo", "ort1.20.1-cpu-op18-torchscript-so-basic"]
    change = runtime.plan_change_for(ids, _installed(onnxruntime="1.32.0"))
    assert change.requirements == ("onnxruntime==1.20.1",)
    assert not runtime.plan_change_for(["node-ort1.24.1-cpu-op17-dynamo"], _installed()).needed


def test_targets_of_two_runtimes_in_one_step_are_a_usage_error() -> None:
    ids = ["ort1.20.1-cpu-op17-dynamo", "ort1.32.0-cpu-op17-dynamo"]
    with pytest.raises(UsageError, match=r"ort1.32.0-cpu-op17-dynamo needs onnxruntime==1.32.0"):
        runtime.plan_change_for(ids, _installed(onnxruntime="1.32.0"))  # even where one is installed
