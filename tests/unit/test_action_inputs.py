"""action.yml, runner/action.yml, the input table in ci_onnx.action and the click commands agree."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import click
import pytest
from ruamel.yaml import YAML

from ci_onnx import action
from ci_onnx.cli import cli
from ci_onnx.contracts.errors import UsageError

ROOT = Path(__file__).resolve().parents[2]


def _load(path: Path) -> dict[str, Any]:
    data = YAML(typ="safe").load(path.read_text())
    assert isinstance(data, dict)
    return data


def _options(command: str) -> set[str]:
    cmd = cli.commands[command]
    return {
        opt
        for p in cmd.params
        if isinstance(p, click.Option)
        for opt in p.opts
        if opt.startswith("--") and opt != "--help"
    }


_PENDING = {
    "report": "--github-token" not in _options("report"),
}
"""Options the action maps that a command on this branch does not have yet (report's --github-token
arrives with the report command). strict xfail: the moment the option exists, the test must pass."""


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(
            c,
            marks=pytest.mark.xfail(
                _PENDING.get(c, False), reason=f"`{c}` does not have every option yet", strict=True
            ),
        )
        for c in action.COMMANDS
    ],
)
def test_every_option_of_the_command_has_an_input_or_is_fixed(command: str) -> None:
    fed = set(action.OPTIONS[command].values()) | set(action.FIXED.get(command, {}))
    assert _options(command) == fed | set(action.UNEXPOSED.get(command, {}))


@pytest.mark.parametrize("path", ["action.yml", "runner/action.yml"])
def test_inputs_are_the_mapped_ones_plus_the_action_own(path: str) -> None:
    inputs = set(_load(ROOT / path)["inputs"])
    mapped = {name for options in action.OPTIONS.values() for name in options}
    assert mapped <= inputs, f"{path} lacks inputs {mapped - inputs}"
    assert inputs - mapped <= action.ACTION_ONLY, f"{path} has unknown inputs {inputs - mapped}"


def test_both_actions_take_the_same_inputs_except_the_python_version() -> None:
    container = set(_load(ROOT / "action.yml")["inputs"])
    composite = set(_load(ROOT / "runner/action.yml")["inputs"])
    assert composite - container == {"python-version"}
    assert container == composite - {"python-version"}


def test_input_descriptions_name_the_commands_that_use_them() -> None:
    inputs = _load(ROOT / "action.yml")["inputs"]
    for name in {n for opts in action.OPTIONS.values() for n in opts}:
        users = [c for c in action.COMMANDS if name in action.OPTIONS[c]]
        description = inputs[name]["description"]
        missing = [c for c in users if not re.search(rf"\b{c}\b[,:]", description)]
        assert not missing, f"input {name}: the description should say what it means for {missing}"


def test_composite_passes_every_input_through_the_environment() -> None:
    steps = _load(ROOT / "runner/action.yml")["runs"]["steps"]
    env = next(s for s in steps if s.get("id") == "gate")["env"]
    passed = {k.removeprefix("INPUT_").lower().replace("_", "-") for k in env if k.startswith("INPUT_")}
    assert passed == set(_load(ROOT / "runner/action.yml")["inputs"]) - {"python-version"}


def test_container_actions_pull_an_image_and_splice_no_arguments() -> None:
    for name in ("action.yml", "slim/action.yml"):
        runs = _load(ROOT / name)["runs"]
        assert runs["using"] == "docker" and runs["image"].startswith("docker://"), name
        assert "args" not in runs, f"{name}: inputs travel as INPUT_* variables, never as spliced arguments"


def _env(**inputs: str) -> dict[str, str]:
    return {f"INPUT_{k.upper()}": v for k, v in inputs.items()}


def test_argv_for_plan_always_writes_github_outputs() -> None:
    inputs = action.Inputs.from_env(_env(command="plan", config="m/onnx-gate.yml", out="p.json"))
    assert action.to_argv(inputs) == [
        "plan",
        "--format",
        "github",
        "--config",
        "m/onnx-gate.yml",
        "--out",
        "p.json",
    ]


def test_argv_repeats_multi_value_inputs_and_skips_empty_ones() -> None:
    env = {
        "INPUT_COMMAND": "report",
        "INPUT_RESULTS": "a\n b, c\n\n",
        "INPUT_PLAN": "",
        "INPUT_GITHUB-TOKEN": "t",
    }
    argv = action.to_argv(action.Inputs.from_env(env))
    assert argv == ["report", "--results", "a", "--results", "b", "--results", "c", "--github-token", "t"]
    assert action.redact(argv)[-1] == "***"


def test_verify_takes_a_matrix_entrys_targets_and_export_its_cache_key_flag() -> None:
    env = {"INPUT_COMMAND": "verify", "INPUT_TARGET": "a,b", "INPUT_BUNDLES": "dir"}
    assert action.to_argv(action.Inputs.from_env(env)) == [
        "verify", "--bundles", "dir", "--target", "a", "--target", "b"
    ]  # fmt: skip
    env = {"INPUT_COMMAND": "export", "INPUT_CACHE-DIR": "c", "INPUT_CACHE-KEY": "true"}
    assert action.to_argv(action.Inputs.from_env(env)) == ["export", "--cache-dir", "c", "--cache-key"]
    env["INPUT_CACHE-KEY"] = "false"
    assert action.to_argv(action.Inputs.from_env(env)) == ["export", "--cache-dir", "c"]


def test_hyphen_and_underscore_spellings_of_an_input_are_one_input() -> None:
    from_container = action.Inputs.from_env({"INPUT_GITHUB-TOKEN": "x"})
    from_composite = action.Inputs.from_env({"INPUT_GITHUB_TOKEN": "x"})
    assert from_container.get("github-token") == from_composite.get("github-token") == "x"


def test_token_default_does_not_leak_into_commands_that_do_not_take_it() -> None:
    env = _env(command="export", config="onnx-gate.yml") | {"INPUT_GITHUB-TOKEN": "t"}
    assert "--github-token" not in action.to_argv(action.Inputs.from_env(env))  # export runs the model


def test_an_input_the_command_does_not_take_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="input bundle: `plan` does not take it"):
        action.to_argv(action.Inputs.from_env(_env(command="plan", bundle="x")))


@pytest.mark.parametrize("command", ["", "run", "init"])
def test_commands_outside_the_action_are_refused(command: str) -> None:
    with pytest.raises(UsageError, match="input command"):
        action.to_argv(action.Inputs.from_env(_env(command=command)))


@pytest.mark.parametrize(("code", "verdict"), [(0, "pass"), (1, "fail"), (2, "error"), (3, "error")])
def test_verdict_follows_the_exit_code(code: int, verdict: str) -> None:
    assert action.verdict(code) == verdict


def test_flag_inputs_reject_anything_but_true_or_false() -> None:
    inputs = action.Inputs.from_env(_env(command="verify", install_runtime="maybe"))
    with pytest.raises(UsageError, match="install-runtime"):
        inputs.flag("install-runtime", default=True)
    assert action.Inputs.from_env({}).flag("install-runtime", default=True) is True


def test_both_actions_have_the_same_outputs() -> None:
    container = set(_load(ROOT / "action.yml")["outputs"])
    composite = _load(ROOT / "runner/action.yml")["outputs"]
    assert set(composite) == container
    for name, spec in composite.items():
        assert spec["value"] == f"${{{{ steps.gate.outputs.{name} }}}}"


def test_the_composite_installs_from_its_own_checkout_with_a_pip_cache_and_no_image() -> None:
    spec = _load(ROOT / "runner/action.yml")
    steps = spec["runs"]["steps"]
    assert [s.get("id") or s["uses"].split("@")[0] for s in steps] == [
        "actions/setup-python",
        "pip-cache",
        "actions/cache",
        "install",
        "gate",
    ]
    cache = steps[2]["with"]
    assert cache["path"] == "${{ steps.pip-cache.outputs.dir }}" and "pip-cache.outputs.key" in cache["key"]
    key = steps[1]["run"]
    for name in ("pyproject.toml", "constraints.txt", "docker/requirements-verify.txt"):
        assert name in key, f"the cache key ignores {name}"
    install = steps[3]["run"]
    assert 'source="$ACTION_PATH/.."' in install and '"$source[export]"' in install and '"$source"' in install
    assert "grep -E '^torch==' \"$source/constraints.txt\"" in install
    for step in steps:
        text = f"{step.get('uses', '')} {step.get('run', '')}"
        assert "docker" not in text.replace("docker/requirements", "") and "ghcr.io" not in text, step


@pytest.mark.parametrize("path", ["action.yml", "slim/action.yml", "runner/action.yml"])
@pytest.mark.parametrize("command", ["plan", "verify", "report"])
def test_every_inputs_default_is_taken_by_every_command(path: str, command: str) -> None:
    """GitHub hands a step every input, defaults included: a default is no value a command refuses."""
    inputs = _load(ROOT / path)["inputs"]
    env = {f"INPUT_{name.upper()}": str(spec.get("default", "")) for name, spec in inputs.items()}
    env["INPUT_COMMAND"] = command
    argv = action.to_argv(action.Inputs.from_env(env))
    assert argv[0] == command
