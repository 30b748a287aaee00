"""`onnx-gate run`'s pieces that need no runtime: the demo matrix, progress lines, the terminal table."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from ci_onnx import config
from ci_onnx import plan as planning
from ci_onnx.contracts.errors import ConfigError
from ci_onnx.contracts.progress import Progress
from ci_onnx.contracts.results import (
    RESULT_SCHEMA_VERSION,
    DecisionStats,
    LatencyStat,
    OutputParity,
    TargetResult,
    write_result,
)
from ci_onnx.contracts.target import Status, Target
from ci_onnx.matrix import platform_tag
from ci_onnx.orchestration import localrun
from tests.conftest import EXAMPLE_CONFIG, FakeIndex
from tests.support.results import observed

NO_INDEX = FakeIndex({})


def demo(platform: str) -> planning.Plan:
    cfg = localrun.demo_config(config.load(EXAMPLE_CONFIG), "1.32.0", platform)
    return planning.expand(cfg, NO_INDEX)


def test_the_demo_matrix_is_the_installed_runtime_two_older_ones_and_openvino_where_it_exists() -> None:
    linux = demo("linux-x86_64")
    runtimes = sorted({(t.runtime, t.provider) for t in linux.targets})
    assert runtimes == [("1.17.3", "cpu"), ("1.20.1", "cpu"), ("1.24.1", "openvino"), ("1.32.0", "cpu")]
    assert {t.id for t in linux.targets if t.expected_skip} == {
        "ort1.17.3-cpu-op21-dynamo",
        "ort1.17.3-cpu-op21-torchscript",
    }
    assert linux.targets, "the demo matrix plans with an index that lists nothing: exact releases stand"
    mac = demo("macos-arm64")
    assert all(t.provider == "cpu" for t in mac.targets)


def test_installed_runtime_equal_to_a_pinned_one_is_planned_once() -> None:
    cfg = localrun.demo_config(config.load(EXAMPLE_CONFIG), "1.20.1", "linux-x86_64")
    assert cfg.targets.runtimes == ("1.20.1", "1.17.3")


@pytest.mark.parametrize(
    ("system", "machine", "tag"),
    [
        ("linux", "x86_64", "linux-x86_64"),
        ("win32", "AMD64", "windows-amd64"),
        ("darwin", "arm64", "macos-arm64"),
        ("linux", "aarch64", "linux-arm64"),
    ],
)
def test_platform_tags(system: str, machine: str, tag: str) -> None:
    assert platform_tag(system, machine) == tag


def test_without_a_checkout_the_example_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="pass --config or run `onnx-gate init`"):
        localrun.example_config(tmp_path / "site-packages" / "ci_onnx")


def test_progress_off_a_terminal_is_one_plain_line_per_change() -> None:
    stream = io.StringIO()
    progress = Progress(["a", "bb"], stream, live=False)
    progress.update("a", "running", "onnxruntime==1.20.1")
    progress.update("a", "passed")
    progress.update("bb", "error", "environment: no such release")
    lines = stream.getvalue().splitlines()
    assert lines[0] == "▶ a   running  onnxruntime==1.20.1"
    assert lines[1].startswith("✓ a   passed   (") and lines[1].endswith(" s)")
    assert lines[2] == "! bb  error    environment: no such release"
    assert "\x1b" not in stream.getvalue()
    assert progress.counts() == {"passed": 1, "error": 1}


def test_progress_on_a_terminal_redraws_the_block_in_place() -> None:
    stream = io.StringIO()
    progress = Progress(["a", "b"], stream, live=True)
    progress.update("a", "running")
    progress.update("a", "failed", "parity")
    text = stream.getvalue()
    assert text.count("\x1b[2F") == 1, "the second draw moves up over the first block"
    assert "\x1b[31m✗ a  failed" in text


def test_terminal_table_has_a_line_per_planned_target(tmp_path: Path) -> None:
    ok = Target("1.32.0", "cpu", 17, "dynamo")
    skip = Target("1.17.3", "cpu", 21, "dynamo", expected_skip="too new")
    lost = Target("1.20.1", "cpu", 17, "dynamo")
    write_result(
        tmp_path,
        observed(
            TargetResult(
                RESULT_SCHEMA_VERSION,
                ok,
                Status.PASSED,
                "",
                parity=(OutputParity("logits", 2.5e-6, 1e-5, 0, 100, 1e-4, 1e-3),),
                decisions=DecisionStats("logits", 1, 0, 40),
            ),
            latency=(LatencyStat(1, 0.1, 0.1, 0.1, 5), LatencyStat(8, 0.4, 0.5, 0.6, 5)),
        ),
    )
    table = localrun.terminal_table(tmp_path, planning.Plan(1, "x", "m", (skip, lost, ok)))
    lines = table.splitlines()
    assert lines[1].split() == ["ort1.17.3-cpu-op21-dynamo", "expected", "too", "new"]  # the reason shows
    assert lines[2].split() == ["ort1.20.1-cpu-op17-dynamo", "missing", "no", "result", "was", "written"]
    assert lines[3].split() == [
        "ort1.32.0-cpu-op17-dynamo",
        "passed",
        "2.50e-06",
        "0/40",
        "changed",
        "0.40",
        "(batch",
        "8)",
    ]


def test_run_without_a_config_takes_the_bundled_example_with_the_demo_matrix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from ci_onnx.cli import cli

    seen: list[config.Config] = []

    def fake_run(cfgs: tuple[config.Config, ...], *_: object) -> None:
        seen.extend(cfgs)  # every model of the config: here the example's one
        raise SystemExit(0)

    monkeypatch.setattr(localrun, "run", fake_run)
    monkeypatch.chdir(tmp_path)  # no onnx-gate.yml here
    result = CliRunner().invoke(cli, ["run", "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "running the bundled example" in result.output
    assert seen[0].path == EXAMPLE_CONFIG
    assert seen[0].export.opsets == (17, 21)
