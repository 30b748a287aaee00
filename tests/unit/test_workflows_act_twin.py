"""The composite twin act runs in place of the container action has the container action's interface
and entry point, so the act scenarios test what users run."""

from __future__ import annotations

import dataclasses
import re
from importlib import metadata
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from tests.act import harness, standin_runner, twin
from tests.conftest import REPO


def test_the_twin_has_action_ymls_inputs_outputs_and_the_images_entry_point(tmp_path: Path) -> None:
    real = YAML(typ="safe").load((REPO / "action.yml").read_text())
    made = YAML(typ="safe").load((harness.action_twin(tmp_path) / "action.yml").read_text())
    assert made["inputs"] == real["inputs"]
    assert set(made["outputs"]) == set(real["outputs"])
    (step,) = made["runs"]["steps"]
    assert {f"INPUT_{n.upper().replace('-', '_')}" for n in real["inputs"]} <= set(step["env"])
    entry = re.search(r'ENTRYPOINT \["python", "-m", "([\w.]+)"\]', (REPO / "Dockerfile").read_text())
    assert entry and step["run"].endswith("-m tests.act.twin")
    assert twin.entry.__name__ == f"{entry.group(1)}.__main__", "the twin runs the image's entry point"


def test_the_runner_actions_twin_has_its_interface(tmp_path: Path) -> None:
    real = YAML(typ="safe").load((REPO / "runner" / "action.yml").read_text())
    made = YAML(typ="safe").load((harness.action_twin(tmp_path) / "runner" / "action.yml").read_text())
    assert made["inputs"] == real["inputs"] and set(made["outputs"]) == set(real["outputs"])
    (step,) = made["runs"]["steps"]
    assert {f"INPUT_{n.upper().replace('-', '_')}" for n in real["inputs"]} <= set(step["env"])


HOST = metadata.version("onnxruntime")


@pytest.mark.parametrize(
    ("inputs", "why"),
    [
        ({"INPUT_COMMAND": "plan"}, "not a verify"),
        ({"INPUT_COMMAND": "verify", "INPUT_TARGET": f"ort{HOST}-cpu-op17-dynamo"}, "the host's runtime"),
        ({"INPUT_COMMAND": "verify", "INPUT_TARGET": "node-ort1.24.1-cpu-op17-dynamo"}, "npm, not pip"),
        (
            {
                "INPUT_COMMAND": "verify",
                "INPUT_TARGET": "ort1.20.1-cpu-op17-dynamo",
                "INPUT_INSTALL_RUNTIME": "false",
            },
            "install-runtime off",
        ),
    ],
)
def test_a_job_keeps_the_hosts_interpreter_when_its_target_needs_nothing_else(
    inputs: dict[str, str], why: str
) -> None:
    assert twin.job_interpreter(inputs) is None, why


def test_a_job_that_needs_another_runtime_never_installs_into_the_shared_environment() -> None:
    with pytest.raises(SystemExit, match=r"ort1\.20\.1-cpu-op17-dynamo needs another runtime"):
        twin.job_interpreter({"INPUT_COMMAND": "verify", "INPUT_TARGET": "ort1.20.1-cpu-op17-dynamo"})


def test_the_stand_in_serves_the_python_kinds_cells_and_changes_nothing_else() -> None:
    from ci_onnx import matrix

    real = matrix.runners()["python"]
    assert standin_runner.info() == dataclasses.replace(real, module="tests.act.standin_runner")


def test_every_github_action_the_workflows_use_has_a_stand_in() -> None:
    from ci_onnx.orchestration import scaffold

    settings = scaffold.Settings()
    used: set[str] = set()
    for fork_safe in (False, True):
        for text in scaffold.starter_files(settings, fork_safe=fork_safe).values():
            used |= set(re.findall(r"uses: (actions/[\w-]+@\w+)", text))
    covered = set(harness.GITHUB_ACTIONS) | set(harness.BUILT_IN)
    assert used and used <= covered, used - covered
    for folder in harness.GITHUB_ACTIONS.values():
        assert (harness.STANDINS / folder / "action.yml").is_file()


def test_the_upload_stand_in_refuses_a_second_upload_as_github_does_unless_overwrite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """What makes the re-run scenario able to fail: a re-run job's upload of a name meets the 409."""
    from tests.act.standins import artifacts

    monkeypatch.setenv("ACT_ARTIFACTS", str(tmp_path / "store"))
    monkeypatch.setenv("GITHUB_WORKSPACE", str(tmp_path / "ws"))
    monkeypatch.setenv("GITHUB_RUN_ID", "7")
    result = tmp_path / "ws" / "out" / "r.json"
    result.parent.mkdir(parents=True)
    result.write_text("first")
    assert artifacts.upload("onnx-gate-results-x", "out/", "error") == 0
    result.write_text("second")
    assert artifacts.upload("onnx-gate-results-x", "out/", "error") == 1
    assert "(409) Conflict" in capsys.readouterr().out
    assert (tmp_path / "store/7/onnx-gate-results-x/r.json").read_text() == "first"
    assert artifacts.upload("onnx-gate-results-x", "out/", "error", overwrite=True) == 0
    assert (tmp_path / "store/7/onnx-gate-results-x/r.json").read_text() == "second"


def test_the_stand_ins_declare_only_inputs_the_real_actions_declare() -> None:
    """A stand-in that accepted an input the real action lacks would let a workflow pass here and
    fail on GitHub; the real inputs are the recorded ones (tests/data/actions)."""
    import json

    from ci_onnx.orchestration import scaffold

    for uses, folder in harness.GITHUB_ACTIONS.items():
        action = uses.partition("@")[0]
        assert uses.partition("@")[2] == scaffold.PINNED[action][0]
        record = json.loads((REPO / "tests/data/actions" / (action.replace("/", "--") + ".json")).read_text())
        stand_in = YAML(typ="safe").load((harness.STANDINS / folder / "action.yml").read_text())
        extra = set(stand_in.get("inputs") or {}) - set(record["inputs"])
        assert not extra, f"{folder} stand-in declares inputs {action} has not: {extra}"


def test_a_crashed_acts_failure_message_keeps_the_panic_line_above_its_goroutine_dump() -> None:
    dump = "".join(f"goroutine {i} [running]:\n\tgithub.com/nektos/act/pkg/common.f()\n" for i in range(400))
    log = "[onnx-gate/verify 1] ✅  Success - Main\npanic: send on closed channel\n\n" + dump
    run = harness.Run(2, log, Path("."))
    message = run.tail(2000)
    assert message.startswith("act crashed:\npanic: send on closed channel")
    assert message.endswith(log[-1000:]) and len(message) < 2100
    calm = harness.Run(1, "x" * 5000 + "\nError: Job 'report' failed\n", Path("."))
    assert calm.tail(2000) == calm.log[-2000:]
