"""``onnx-gate init`` in an empty directory, then ``onnx-gate plan`` there, works."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from ci_onnx import config
from ci_onnx.cli import cli


class FakeIndex:
    def __init__(self, *args: object, **kwargs: object) -> None:
        pass

    def versions(self, package: str) -> list[str]:
        return ["1.32.0", "1.20.1"]


@pytest.fixture
def empty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("ci_onnx.host.resolve.PipIndex", FakeIndex)
    return tmp_path


def test_init_then_plan(empty: Path) -> None:
    runner = CliRunner()
    done = runner.invoke(cli, ["init"])
    assert done.exit_code == 0, done.output
    assert sorted(str(p.relative_to(empty)) for p in empty.rglob("*") if p.is_file()) == [
        ".github/workflows/onnx-gate-nightly.yml",
        ".github/workflows/onnx-gate.yml",
        ".gitignore",
        "onnx-gate.yml",
    ]
    unpointed = runner.invoke(cli, ["plan"])  # model.factory still names the placeholder
    assert unpointed.exit_code == 2 and "model.factory: model.py does not exist" in unpointed.output
    (empty / "model.py").write_text("def build():\n    ...\n")
    planned = runner.invoke(cli, ["plan"])
    assert planned.exit_code == 0, planned.output
    assert "ort1.20.1-cpu-op17-dynamo" in planned.output
    assert "ort1.32.0-cpu-op17-dynamo" in planned.output


def test_the_written_config_is_commented_and_valid(empty: Path) -> None:
    CliRunner().invoke(cli, ["init"])
    text = (empty / "onnx-gate.yml").read_text()
    assert sum(line.lstrip().startswith("#") for line in text.splitlines()) >= 15
    cfg = config.load(empty / "onnx-gate.yml")
    assert cfg.targets.runtimes == ("1.20.1", "latest")


def test_init_refuses_to_overwrite_without_force(empty: Path) -> None:
    runner = CliRunner()
    (empty / "onnx-gate.yml").write_text("mine\n")
    done = runner.invoke(cli, ["init"])
    assert done.exit_code == 2
    assert "onnx-gate.yml" in done.output and "--force" in done.output
    assert (empty / "onnx-gate.yml").read_text() == "mine\n"
    assert not (empty / ".github").exists()
    assert runner.invoke(cli, ["init", "--force"]).exit_code == 0
    assert (empty / "onnx-gate.yml").read_text() != "mine\n"


def test_fork_safe_writes_the_pair(empty: Path) -> None:
    done = CliRunner().invoke(cli, ["init", "sub", "--fork-safe", "--action", "me/onnx-gate@v1.2.0"])
    assert done.exit_code == 0, done.output
    gate = (empty / "sub/.github/workflows/onnx-gate.yml").read_text()
    comment = (empty / "sub/.github/workflows/onnx-gate-comment.yml").read_text()
    assert "uses: me/onnx-gate@v1.2.0" in gate and "uses: me/onnx-gate/runner@v1.2.0" in gate
    assert "pull-requests: write" not in gate
    assert "workflow_run:" in comment and "pull-requests: write" in comment
    assert "actions/checkout" not in comment, "the trusted job must never check out the pull request"
    assert "onnx-gate-out/collected/pr-number" in gate and "onnx-gate-in/collected/pr-number" in comment
    assert "name: onnx-gate-comment" in gate and "name: onnx-gate-comment" in comment


def test_composite_sends_every_job_through_the_runner_action(empty: Path) -> None:
    """No container action, so no image to pull: every uses: of onnx-gate is its runner/ folder."""
    done = CliRunner().invoke(cli, ["init", "--composite", "--action", "me/onnx-gate@v1.2.0"])
    assert done.exit_code == 0, done.output
    for name in ("onnx-gate.yml", "onnx-gate-nightly.yml"):
        text = (empty / ".github/workflows" / name).read_text()
        ours = re.findall(r"uses: (me/onnx-gate\S*)", text)
        assert ours and set(ours) == {"me/onnx-gate/runner@v1.2.0"}, (name, ours)
        assert "command: export" in text or name.endswith("nightly.yml")


@pytest.mark.parametrize("bad", ["onnx-gate", "a/b", "a@v1", "a/b/c@v1"])
def test_a_malformed_action_reference_is_refused(empty: Path, bad: str) -> None:
    done = CliRunner().invoke(cli, ["init", "--action", bad])
    assert done.exit_code == 2 and "owner/repo@ref" in done.output


def test_init_ignores_the_output_folder_once(empty: Path) -> None:
    (empty / ".gitignore").write_text("*.pyc")
    runner = CliRunner()
    assert "added onnx-gate-out/ to" in runner.invoke(cli, ["init"]).output
    assert (empty / ".gitignore").read_text() == "*.pyc\nonnx-gate-out/\n"
    again = runner.invoke(cli, ["init", "--force"])
    assert again.exit_code == 0 and "added" not in again.output
    assert (empty / ".gitignore").read_text().count("onnx-gate-out") == 1


def test_init_for_an_onnx_file_writes_an_onnx_only_config_that_exports_as_written(empty: Path) -> None:
    import onnx

    from ci_onnx.contracts.bundle import read_manifest
    from tests import bundles

    missing = CliRunner().invoke(cli, ["init", "--onnx", "detector.onnx"])
    assert missing.exit_code == 2 and not list(empty.iterdir())
    assert missing.output.strip().splitlines() == [
        "onnx-gate: error: --onnx detector.onnx: no such file in . (onnx-gate.yml names it relative to its own directory)"
    ]
    onnx.save(bundles.mlp(), empty / "detector.onnx")
    done = CliRunner().invoke(cli, ["init", "--onnx", "detector.onnx"])
    assert done.exit_code == 0, done.output
    assert "optionally put test data under test_data/" in done.output
    text = (empty / "onnx-gate.yml").read_text()
    assert "factory:" not in text and "onnx: detector.onnx" in text and "  # test_data: test_data" in text
    cfg = config.load(empty / "onnx-gate.yml")
    assert cfg.onnx_only and cfg.model.name == "detector" and not cfg.model.test_data
    # what the comment promises: without test data, random inputs against onnxruntime's own run
    exported = CliRunner().invoke(cli, ["export", "--out", "bundles"])
    assert exported.exit_code == 0, exported.output
    (data_set,) = read_manifest(empty / "bundles" / "op17-onnx").test_data_sets
    assert (data_set.kind, data_set.count) == ("random", cfg.verify.random_inputs)


def test_help_lists_each_command_once_in_pipeline_order() -> None:
    text = CliRunner().invoke(cli, ["--help"]).output
    commands = text.split("Commands:")[1].split("Exit codes:")[0]
    # a command's line starts with two spaces; its help's continuation lines with more
    listed = [
        line.split()[0] for line in commands.splitlines() if line.startswith("  ") and line[2:3].strip()
    ]
    assert listed == ["plan", "export", "verify", "triage", "reverify", "report", "nightly", "run", "init"]
    for name in listed:
        assert len(re.findall(rf"^\s+{name}\s", text, re.MULTILINE)) == 1, name
