"""The android kind's releases come from Maven's maven-metadata.xml, not from PyPI.

Maven Central's onnxruntime-android skips patch releases PyPI has (1.20.1, 1.22.1, 1.24.1) and can
lag PyPI by days: a release the runtime list names that Maven lacks is an expected skip naming the
nearest ones, planned, never a 404 when verify fetches the AAR. Maven is served on loopback from a
recorded copy of the metadata (tests/support/maven.py); the python cells' releases come from a
package index on loopback (tests/support/pypi.py) or a fixed list.
"""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from ci_onnx import config
from ci_onnx import plan as planning
from ci_onnx.cli import cli
from ci_onnx.contracts.errors import EnvironmentProblem
from ci_onnx.host.resolve import MAVEN, PipIndex, ask_maven, maven_versions, resolve
from ci_onnx.orchestration import scaffold
from ci_onnx.plan import cijobs
from tests.conftest import FakeIndex
from tests.support import maven, pypi

ANDROID = MAVEN + maven.COORDINATE
PYPI = ["1.32.0", "1.24.4", "1.24.1", "1.22.1", "1.22.0", "1.20.1", "1.20.0"]
"""PyPI's onnxruntime as far as these tests go: it has the patch releases Maven skips."""
ON_MAVEN = ["1.17.1", "1.20.0", "1.22.0", "1.24.2", "1.28.0", "1.29.0", "1.30.0"]


@pytest.fixture(scope="module")
def maven_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with maven.serve(tmp_path_factory.mktemp("maven2")) as (url, _):
        yield url


class Both:
    """PyPI from a fixed list, Maven from the loopback repository, as the real resolver splits them."""

    def __init__(self, maven_url: str) -> None:
        self.pypi = FakeIndex({"onnxruntime": PYPI})
        self.maven = PipIndex(maven_url=maven_url)

    def versions(self, package: str, *, pre: bool = False) -> list[str]:
        return (self.maven if package.startswith(MAVEN) else self.pypi).versions(package, pre=pre)


def test_the_recorded_metadata_has_what_is_known_of_maven_central() -> None:
    listed = maven_versions(maven.RECORDED.read_bytes(), str(maven.RECORDED))
    assert listed == ON_MAVEN
    assert {"1.20.0", "1.22.0", "1.24.2"} <= set(listed)
    assert not {"1.20.1", "1.22.1", "1.24.1"} & set(listed)


def test_maven_releases_are_read_from_the_metadata_newest_first(maven_url: str) -> None:
    assert ask_maven(maven.COORDINATE, maven_url) == ON_MAVEN
    assert PipIndex(maven_url=maven_url).versions(ANDROID) == ON_MAVEN[::-1]


def test_latest_wildcards_and_exact_resolve_on_maven(maven_url: str) -> None:
    index = PipIndex(maven_url=maven_url)
    assert resolve("latest", ANDROID, index) == "1.30.0"
    assert resolve("1.24.*", ANDROID, index) == "1.24.2"  # PyPI's newest 1.24 is 1.24.4
    assert resolve("1.22", ANDROID, index) == "1.22.0"
    assert resolve("1.29.0", ANDROID, index) == "1.29.0"


def _config(tmp_path: Path, runtimes: str) -> config.Config:
    path = tmp_path / "onnx-gate.yml"
    (tmp_path / "m.py").write_text("def build():\n    raise NotImplementedError\n")  # plan reads it
    path.write_text(
        "version: 1\nmodel: {factory: m.py:build, inputs: {x: {shape: [1, 3]}}, outputs: [y]}\n"
        "export: {opsets: [17], exporters: [dynamo]}\n"
        f"targets: {{runtimes: {runtimes}, providers: [cpu], runners: [python, android]}}\n"
    )
    return config.load(path)


def test_a_release_maven_lacks_is_an_expected_skip_naming_the_nearest(tmp_path: Path, maven_url: str) -> None:
    plan = planning.expand(_config(tmp_path, '["1.20.1", "1.24.*", latest]'), Both(maven_url))
    cells = {t.id: t for t in plan.targets}
    skipped = cells["android-api34-ort1.20.1-cpu-op17-dynamo"]
    assert skipped.expected_skip == (
        "com.microsoft.onnxruntime:onnxruntime-android has no release 1.20.1 on Maven "
        "(nearest: 1.17.1, 1.20.0, 1.22.0, 1.24.2)"
    )
    assert not cells["ort1.20.1-cpu-op17-dynamo"].expected_skip, "PyPI has 1.20.1: the python cell runs"
    assert not cells["android-api34-ort1.24.2-cpu-op17-dynamo"].expected_skip
    assert "ort1.24.4-cpu-op17-dynamo" in cells  # the python kind's 1.24.* is PyPI's newest
    assert not cells["android-api34-ort1.30.0-cpu-op17-dynamo"].expected_skip  # Maven's latest
    assert "ort1.32.0-cpu-op17-dynamo" in cells  # PyPI's latest, days ahead of Maven's
    android = json.loads(cijobs.github_outputs(plan)["matrix-android"])["include"]
    assert {c["runtime"] for c in android} == {"1.24.2", "1.30.0"}, "a skipped cell never reaches a job"


def test_a_release_no_registry_has_is_still_a_config_error(tmp_path: Path, maven_url: str) -> None:
    from ci_onnx.host.resolve import NoRelease

    with pytest.raises(
        NoRelease, match=re.escape("onnxruntime has no release 1.21.7 on the configured package index")
    ):
        planning.expand(_config(tmp_path, '["1.21.7"]'), Both(maven_url))


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_maven_out_of_reach_or_answering_nonsense_is_one_line(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    with pytest.raises(EnvironmentProblem) as down:
        ask_maven(maven.COORDINATE, url)
    assert (
        f"from {url}/com/microsoft/onnxruntime/onnxruntime-android/maven-metadata.xml" in down.value.message
    )
    assert "ONNX_GATE_MAVEN" in down.value.message and "\n" not in down.value.message
    with (
        maven.serve(tmp_path / "empty", metadata=None) as (empty, _),
        pytest.raises(EnvironmentProblem) as gone,
    ):
        ask_maven(maven.COORDINATE, empty)
    assert "(HTTP 404 " in gone.value.message
    bad = tmp_path / "bad.xml"
    bad.write_text("<html>a login page</p>")
    with (
        maven.serve(tmp_path / "bad", metadata=bad) as (nonsense, _),
        pytest.raises(EnvironmentProblem) as odd,
    ):
        ask_maven(maven.COORDINATE, nonsense)
    assert "not Maven repository metadata" in odd.value.message


def test_onnx_gate_plan_asks_the_maven_repository_onnx_gate_maven_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, maven_url: str
) -> None:
    """The edge: the CLI's resolver reads $ONNX_GATE_MAVEN (CI reaches Maven Central itself)."""
    _config(tmp_path, '["1.20.1", latest]')
    with pypi.serve({"onnxruntime": [pypi.wheel_name("onnxruntime", v) for v in PYPI]}) as index_url:
        for key, value in pypi.pip_env(index_url).items():
            monkeypatch.setenv(key, value)
        monkeypatch.setenv("ONNX_GATE_MAVEN", maven_url)
        done = CliRunner().invoke(cli, ["plan", "--config", str(tmp_path / "onnx-gate.yml")])
    assert done.exit_code == 0, done.output
    assert "android-api34-ort1.20.1-cpu-op17-dynamo" in done.output
    assert "no release 1.20.1 on Maven (nearest: 1.17.1, 1.20.0, 1.22.0, 1.24.2)" in done.output
    assert "latest → 1.30.0" in done.output and "latest → 1.32.0" in done.output


def test_init_android_writes_releases_maven_has(tmp_path: Path, maven_url: str) -> None:
    text = scaffold.config_file(android=True)
    path = tmp_path / "onnx-gate.yml"
    path.write_text(text)
    cfg = config.load(path)
    exact = [r for r in cfg.targets.runtimes if r[0].isdigit()]
    assert exact and set(exact) <= set(ON_MAVEN) and set(exact) <= set(PYPI)
    plan = planning.expand(cfg, Both(maven_url))
    android = [t for t in plan.targets if t.runner == "android"]
    assert android and not any("no release" in t.expected_skip for t in android), android
    assert "1.20.1" in scaffold.config_file(), "without android the starter keeps PyPI's patch release"
