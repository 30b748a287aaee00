"""The android kind's whole adb sequence with the real native observer, on a stand-in device.

The stand-in adb (tests/support/standin_adb.py) maps the device's /data/local/tmp to a directory
here and runs ``adb shell`` locally; $ONNX_GATE_ANDROID_CC and $ONNX_GATE_ANDROID_LIB make the kind
build the observer with the host's cc and run it on the host's libonnxruntime 1.29.0 (both from the
Unity package, com.github.asus4.onnxruntime 0.4.9, whose AAR gives the headers). So this proves the
sequence, provisioning and collect on real outputs, judged beside the Python runner; the Android
build itself (NDK clang, bionic, the AAR's jni/x86_64 library) runs only in the CI job.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ci_onnx.cli import cli
from ci_onnx.contracts import proc
from ci_onnx.contracts.target import Status, Target
from ci_onnx.contracts.verify_options import VerifyOptions
from ci_onnx.runners import android, base
from ci_onnx.verify import stage
from tests import bundles
from tests.support import standin_adb
from tests.support.verdicts import expected_elsewhere

native = pytest.importorskip(
    "ci_onnx.runners.native", reason="the android kind runs the native observer (ci_onnx/runners/native.py)"
)
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("cc") is None, reason="the host build of the observer needs cc"),
    pytest.mark.skipif(shutil.which("npm") is None, reason="the Unity package (headers, AAR) comes from npm"),
]
RELEASE = native.HEADERS_RELEASE


@pytest.fixture(scope="module")
def device(tmp_path_factory: pytest.TempPathFactory, env_cache: Path) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("android")
    how = base.Provisioning(env_cache, proc.child_environment(os.environ))
    unity = native.headers(how).parents[4]  # …/Plugins
    bin_dir, root = work / "bin", work / "device"
    standin_adb.install(bin_dir, root)
    environ = {
        **how.environ,
        "PATH": f"{bin_dir}{os.pathsep}{how.environ.get('PATH', '')}",
        android.AAR_ENV: str(unity / "Android" / "onnxruntime.aar"),
        android.CC_ENV: "cc",
        android.LIB_ENV: str(unity / "Linux" / "x64" / "libonnxruntime.so"),
    }
    return {
        "work": work,
        "root": root,
        "how": base.Provisioning(work / "cache", environ),
        "bundle": bundles.mlp_bundle(work / "mlp"),
    }


def _verify(device: dict[str, Any], target: Target, out: Path, **options: Any) -> Any:
    return stage.verify_target(device["bundle"], target, out, VerifyOptions(**options), device["how"]).result


def test_the_adb_sequence_gives_the_python_runners_verdict_with_real_outputs(
    device: dict[str, Any], tmp_path: Path
) -> None:
    t = Target(RELEASE, "cpu", 17, "onnx", runner="android", api_level=34)
    r = _verify(device, t, tmp_path / "out", latency_runs=5)
    assert r.status == Status.PASSED, r.summary
    env, placement = r.observed.environment, r.observed.placement
    assert env is not None and env.runtime_version == RELEASE
    assert env.platform == "android-34-x86_64 (emulator)"
    assert placement is not None and set(placement.nodes_by_provider) == {"CPUExecutionProvider"}
    assert {c.name for c in r.checks} >= {"provider", "parity[logits]", "batch[8]", "latency"}
    python = stage.verify(
        device["bundle"],
        Target(importlib.metadata.version("onnxruntime"), "cpu", 17, "onnx"),  # this interpreter's
        tmp_path / "py",
        VerifyOptions(latency_runs=5),
        python=sys.executable,
        base_env=device["how"].environ,
    ).result
    assert python.status == r.status == Status.PASSED
    assert [(c.name, str(c.status)) for c in r.checks] == expected_elsewhere(
        (c.name, c.status) for c in python.checks
    )
    obs = json.loads((tmp_path / "out" / stage.OBSERVATIONS / t.id / "observation.json").read_text())
    assert android.EMULATOR_SCOPE in obs["notes"]


def test_a_hang_on_the_device_is_an_error_result(device: dict[str, Any], tmp_path: Path) -> None:
    t = Target(RELEASE, "cpu", 17, "onnx", runner="android", api_level=34)
    standin_adb.configure(device["root"], hang=True)
    try:
        r = _verify(device, t, tmp_path / "out", timeout_s=5)
    finally:
        standin_adb.configure(device["root"], hang=False)
    assert r.status == Status.ERROR
    check = r.check("runner")
    assert check is not None and "timed out after" in check.message


def test_onnx_gate_verify_drives_the_device_from_the_command_line(
    device: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in device["how"].environ.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("XDG_CACHE_HOME", str(device["work"] / "xdg"))
    target_id = f"android-api34-ort{RELEASE}-cpu-op17-onnx"
    args = ["verify", "--bundle", str(device["bundle"]), "--target", target_id, "--out", str(tmp_path)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    written = json.loads((tmp_path / "results" / f"{target_id}.json").read_text())
    assert written["status"] == "passed" and written["target"]["api_level"] == 34
    standin_adb.configure(device["root"], state="unauthorized")
    try:
        result = CliRunner().invoke(cli, args)
    finally:
        standin_adb.configure(device["root"], state="device")
    assert result.exit_code == 3
    assert (
        result.output.strip()
        .splitlines()[-1]
        .endswith("is unauthorized: accept the USB debugging prompt on the device")
    )


@pytest.mark.parametrize(("provider", "ep"), [("xnnpack", "Xnnpack"), ("nnapi", "Nnapi")])
def test_an_ep_the_library_lacks_fails_the_provider_check_on_evidence(
    device: dict[str, Any], tmp_path: Path, provider: str, ep: str
) -> None:
    """The host's Linux library has neither EP (the AAR's Android one has both): the cell must fail on
    the provider check with what registered, never pass on the CPU."""
    t = Target(RELEASE, provider, 17, "onnx", runner="android", api_level=34)
    r = _verify(device, t, tmp_path / "out", latency_runs=3)
    assert r.status == Status.FAILED
    check = r.check("provider")
    assert check is not None and check.status == Status.FAILED
    assert check.message.startswith(f"asked for {ep}ExecutionProvider, got CPUExecutionProvider")
