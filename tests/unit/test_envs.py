"""Per-runtime environments: built once per (package, version), reused, and clear when a version is missing.

A stand-in for uv records what it was asked and builds a fake environment, so these tests run fast;
tests/e2e builds real ones.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from ci_onnx.contracts.errors import EnvironmentProblem
from ci_onnx.contracts.target import Target
from ci_onnx.host import envs
from ci_onnx.runners import base
from ci_onnx.runners.base import RunnerEnv

FAKE_UV = """#!{python}
import pathlib, sys
log = pathlib.Path({log!r})
import os
log.open("a").write(" ".join(sys.argv[1:]) + "\\n")
log.with_suffix(".index").open("a").write(os.environ.get("UV_INDEX_URL", "-") + "\\n")
args = sys.argv[1:]
if args[0] == "venv":
    env = pathlib.Path(args[-1])
    (env / "bin").mkdir(parents=True)
    (env / "bin" / "python").write_text("")
elif any("9.9.9" in a for a in args):
    print("  × No solution found: there is no version of onnxruntime==9.9.9", file=sys.stderr)
    sys.exit(1)
elif any("broken" in a for a in args):
    print("error: disk full", file=sys.stderr)
    sys.exit(1)
"""


@pytest.fixture
def fake_uv(tmp_path: Path) -> tuple[str, Path]:
    log = tmp_path / "uv.log"
    uv = tmp_path / "uv"
    uv.write_text(FAKE_UV.format(python=sys.executable, log=str(log)))
    uv.chmod(0o755)
    return str(uv), log


def test_numpy_below_2_for_runtimes_built_against_numpy_1() -> None:
    assert envs.requirements("onnxruntime", "1.17.3") == ["onnxruntime==1.17.3", "numpy<2"]
    assert envs.requirements("onnxruntime-openvino", "1.24.1") == ["onnxruntime-openvino==1.24.1", "numpy"]


def test_an_environment_is_built_once_and_reused(tmp_path: Path, fake_uv: tuple[str, Path]) -> None:
    uv, log = fake_uv
    first = envs.ensure("onnxruntime", "1.17.3", tmp_path / "cache", uv=uv)
    again = envs.ensure("onnxruntime", "1.17.3", tmp_path / "cache", uv=uv)
    assert first == again and first.python.exists()
    calls = log.read_text().splitlines()
    assert len(calls) == 2  # one venv, one install: the second call reused the cache
    assert calls[1].startswith("pip install") and calls[1].endswith("onnxruntime==1.17.3 numpy<2")
    other = envs.ensure("onnxruntime", "1.20.1", tmp_path / "cache", uv=uv)
    assert other.path != first.path


def test_the_environment_is_compiled_once_when_built(tmp_path: Path, fake_uv: tuple[str, Path]) -> None:
    """The runner cannot write .pyc files (PYTHONDONTWRITEBYTECODE), so the install must write them."""
    uv, log = fake_uv
    envs.ensure("onnxruntime", "1.20.1", tmp_path, uv=uv)
    install = log.read_text().splitlines()[1].split()
    assert install[:2] == ["pip", "install"] and "--compile-bytecode" in install


def test_a_half_built_environment_is_rebuilt(tmp_path: Path, fake_uv: tuple[str, Path]) -> None:
    uv, _ = fake_uv
    half = envs.env_dir(tmp_path, "onnxruntime", "1.20.1")
    (half / "bin").mkdir(parents=True)  # no ready marker: an interrupted build
    envs.ensure("onnxruntime", "1.20.1", tmp_path, uv=uv)
    assert (half / envs.READY).read_text().strip() == "onnxruntime==1.20.1"


def _provision(target: Target, cache: Path, uv: str) -> RunnerEnv:
    """The python kind's environment for ``target``, as verify and run provision it."""
    return base.provision(target, base.Provisioning(cache, {"PATH": os.environ.get("PATH", "")}, uv=uv))


def test_a_version_that_does_not_exist_names_the_requirement(
    tmp_path: Path, fake_uv: tuple[str, Path]
) -> None:
    uv, _ = fake_uv
    target = Target("9.9.9", "cpu", 17, "dynamo")
    with pytest.raises(EnvironmentProblem) as info:
        _provision(target, tmp_path, uv)
    assert "onnxruntime==9.9.9" in info.value.message
    assert not envs.env_dir(tmp_path, "onnxruntime", "9.9.9").exists()


def test_other_install_failures_keep_the_installer_message(tmp_path: Path, fake_uv: tuple[str, Path]) -> None:
    uv, _ = fake_uv
    with pytest.raises(EnvironmentProblem, match="disk full"):
        envs.ensure("onnxruntime", "1.0.0-broken", tmp_path, uv=uv)


def test_the_provider_picks_the_package(tmp_path: Path, fake_uv: tuple[str, Path]) -> None:
    uv, _ = fake_uv
    env = _provision(Target("1.24.1", "openvino", 17, "dynamo"), tmp_path, uv)
    assert (env.package, env.release) == ("onnxruntime-openvino", "1.24.1")
    assert env.path == envs.env_dir(tmp_path, "onnxruntime-openvino", "1.24.1")


def test_pip_index_settings_reach_uv(tmp_path: Path, fake_uv: tuple[str, Path]) -> None:
    """The plan resolved versions through pip's index; uv must install from that index, not PyPI."""
    uv, log = fake_uv
    environ = {"PATH": "/usr/bin:/bin", "PIP_INDEX_URL": "http://127.0.0.1:9/simple/"}
    envs.ensure("onnxruntime", "1.20.1", tmp_path / "cache", uv=uv, environ=environ)
    assert log.with_suffix(".index").read_text().splitlines() == ["http://127.0.0.1:9/simple/"] * 2


def test_uv_environment_carries_pip_indexes_over_with_pips_strategy() -> None:
    carried = envs.uv_environment(
        {"PIP_INDEX_URL": "https://a/simple", "PIP_EXTRA_INDEX_URL": "https://b/simple"}
    )
    assert carried["UV_INDEX_URL"] == "https://a/simple"
    assert carried["UV_EXTRA_INDEX_URL"] == "https://b/simple"
    assert carried["UV_INDEX_STRATEGY"] == "unsafe-best-match"
    own = envs.uv_environment({"PIP_INDEX_URL": "https://a/simple", "UV_INDEX_URL": "https://mine/simple"})
    assert own["UV_INDEX_URL"] == "https://mine/simple"
    assert "UV_INDEX_STRATEGY" not in envs.uv_environment({"PATH": "/bin"})
