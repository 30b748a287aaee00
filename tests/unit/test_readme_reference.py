"""README.md's reference tables are the CLI's and the action's own: an option, command or input
added to one and not to the other fails here (the command table lacked `run --no-cache`, `verify
--plan` and `init --onnx/--android/--fork-safe`; the inputs table lacked the `nightly` command)."""

from __future__ import annotations

import re

import click
from ruamel.yaml import YAML

from ci_onnx import cli_reference
from ci_onnx.cli import cli
from tests.conftest import REPO

README = REPO / "README.md"


def test_readme_command_table_is_generated_from_the_cli() -> None:
    text = README.read_text()
    assert cli_reference.render() in text, "run `python -m ci_onnx.cli_reference --write README.md`"


def test_the_command_table_names_every_option_of_every_command() -> None:
    block = cli_reference.render()
    for name, command in cli.commands.items():
        (row,) = [line for line in block.splitlines() if line.startswith(f"| `onnx-gate {name} ")]
        for param in command.params:
            if isinstance(param, click.Option) and "--help" not in param.opts:
                assert max(param.opts, key=len) in row, (name, param.opts)
    for flag in ("--no-cache", "--plan FILE", "--onnx MODEL.onnx", "--android", "--fork-safe"):
        assert flag in block


def test_every_input_of_each_action_is_in_the_readme_table_and_every_command_too() -> None:
    text = README.read_text()
    table = text.split("### The action's inputs", 1)[1].split("\n\n", 2)[1]
    named = set(re.findall(r"`([a-z-]+)`", "\n".join(line.split(" | ")[0] for line in table.splitlines())))
    for action in ("action.yml", "slim/action.yml", "runner/action.yml"):
        inputs = YAML(typ="safe").load((REPO / action).read_text())["inputs"]
        assert set(inputs) <= named, (action, sorted(set(inputs) - named))
    command_row = next(line for line in table.splitlines() if line.startswith("| `command` |"))
    said = YAML(typ="safe").load((REPO / "action.yml").read_text())["inputs"]["command"]["description"]
    for command in re.findall(r"\b(plan|export|verify|report|nightly)\b", said):
        assert f"`{command}`" in command_row, command


def test_range_is_one_semantics_everywhere_high_excluded() -> None:
    """init wrote [low, high] and the README [low, high): the random integers never reach high."""
    import numpy as np

    from ci_onnx.bundle import TensorSpec
    from ci_onnx.config import schema
    from ci_onnx.export import inputs

    drawn = inputs.random_inputs([TensorSpec("ids", ("batch", 64), "int64", (0, 3))], 64, 0, {})["ids"]
    assert set(np.unique(drawn)) == {0, 1, 2}
    described = schema()["properties"]["model"]["properties"]["inputs"]["additionalProperties"]
    assert described["properties"]["range"]["description"].startswith("[low, high)")
    template = (REPO / "templates" / "onnx-gate.yml.j2").read_text()
    for text in (template, README.read_text()):
        assert "[low, high]" not in text
    assert "`range: [low, high)`" in template
