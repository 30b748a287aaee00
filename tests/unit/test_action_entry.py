"""``python -m ci_onnx.action``: from INPUT_* variables to the CLI's exit code and step outputs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ci_onnx.action import __main__ as entry
from ci_onnx.action import pr_context
from ci_onnx.contracts.errors import UsageError

ROOT = Path(__file__).resolve().parents[2]


class FakeIndex:
    def __init__(self, *args: object, **kwargs: object) -> None:
        pass

    def versions(self, package: str) -> list[str]:
        return ["1.32.0", "1.24.1", "1.20.1"]


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(ROOT / "examples/tinycnn", tmp_path / "tinycnn")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("ci_onnx.host.resolve.PipIndex", FakeIndex)
    return tmp_path


def _outputs(path: Path) -> dict[str, str]:
    lines = path.read_text().splitlines()
    out, i = {}, 0
    while i < len(lines):
        key, _, delimiter = lines[i].partition("<<")
        end = lines.index(delimiter, i + 1)
        out[key] = "\n".join(lines[i + 1 : end])
        i = end + 1
    return out


def test_plan_writes_the_matrix_outputs(workspace: Path) -> None:
    github_output = workspace / "github_output"
    github_output.touch()
    env = {
        "INPUT_COMMAND": "plan",
        "INPUT_CONFIG": "onnx-gate.yml",
        "INPUT_OUT": "../plan.json",
        "INPUT_WORKING-DIRECTORY": "tinycnn",
        "INPUT_GITHUB-TOKEN": "secret",
        "INPUT_INSTALL-RUNTIME": "true",
        "GITHUB_OUTPUT": str(github_output),
    }
    monkey_env = dict(env)
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():
            mp.setenv(k, v)
        assert entry.run(monkey_env) == 0
    outputs = _outputs(github_output)
    matrix = json.loads(outputs["matrix"])
    assert {i for c in matrix["include"] for i in c["targets"]} >= {
        "ort1.20.1-cpu-op17-dynamo",
        "ort1.32.0-openvino-op18-dynamo",
    }
    assert outputs["runner-targets"] == "0"
    assert json.loads((workspace / "plan.json").read_text())["targets"]


def test_a_config_error_comes_back_as_exit_code_2(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert entry.run({"INPUT_COMMAND": "plan", "INPUT_CONFIG": "missing.yml"}) == 2
    assert "missing.yml: no such file" in capsys.readouterr().err


def test_a_bad_input_is_an_annotated_usage_error(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert entry.run({"INPUT_COMMAND": "plan", "INPUT_TARGET": "x"}) == 2
    assert capsys.readouterr().err.startswith("::error title=onnx-gate::input target")


def test_verify_installs_nothing_when_asked_not_to(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object) -> None:
        raise AssertionError("no install expected")

    monkeypatch.setattr("ci_onnx.action.runtime.apply", refuse)
    env = {
        "INPUT_COMMAND": "verify",
        "INPUT_BUNDLE": "nowhere",
        "INPUT_TARGET": "ort1.20.1-cpu-op17-dynamo",
        "INPUT_INSTALL-RUNTIME": "false",
    }
    assert entry.run(env) in (2, 3)


def test_pull_request_context_becomes_a_pull_request_event(tmp_path: Path) -> None:
    original = tmp_path / "event.json"
    original.write_text(json.dumps({"repository": {"full_name": "o/r"}, "workflow_run": {}}))
    env = {
        "GITHUB_EVENT_PATH": str(original),
        "GITHUB_EVENT_NAME": "workflow_run",
        "RUNNER_TEMP": str(tmp_path),
    }
    pr_context.apply("42", "a" * 40, env)
    assert env["GITHUB_EVENT_NAME"] == "pull_request" and env["GITHUB_SHA"] == "a" * 40
    event = json.loads(Path(env["GITHUB_EVENT_PATH"]).read_text())
    assert event["pull_request"]["number"] == 42 and event["repository"] == {"full_name": "o/r"}


@pytest.mark.parametrize(("number", "sha"), [("42; rm -rf /", "a" * 40), ("0", "a" * 40), ("7", "abc")])
def test_pull_request_context_refuses_anything_but_a_number_and_a_sha(number: str, sha: str) -> None:
    env: dict[str, str] = {}
    with pytest.raises(UsageError):
        pr_context.apply(number, sha, env)
    assert env == {}


def test_without_pull_request_inputs_the_event_is_left_alone() -> None:
    env = {"GITHUB_EVENT_NAME": "pull_request"}
    pr_context.apply("", "", env)
    assert env == {"GITHUB_EVENT_NAME": "pull_request"}


def test_a_failing_target_leaves_its_verify_step_green_and_the_report_decides() -> None:
    from ci_onnx.action.__main__ import step_exit
    from ci_onnx.contracts.errors import EXIT_FAIL, EXIT_INTERNAL, EXIT_PASS, EXIT_USAGE

    assert step_exit("verify", EXIT_FAIL) == EXIT_PASS
    assert (
        step_exit("verify", EXIT_INTERNAL) == EXIT_INTERNAL and step_exit("verify", EXIT_USAGE) == EXIT_USAGE
    )
    assert step_exit("report", EXIT_FAIL) == EXIT_FAIL  # the report is the gate
