"""The docs' reference tables are the CLI's and the action's own: an option, command or input added
to one and not to the other fails here (the command table lacked `run --no-cache`, `verify --plan`
and `init --onnx/--android/--fork-safe`; the inputs table lacked the `nightly` command)."""

from __future__ import annotations

import re

import click
from ruamel.yaml import YAML

from ci_onnx.cli import cli
from ci_onnx.cli import reference as cli_reference
from tests.conftest import REPO

CLI_PAGE = REPO / "docs" / "reference" / "cli.md"
ACTION_PAGE = REPO / "docs" / "reference" / "action.md"


def test_the_command_page_is_generated_from_the_cli() -> None:
    text = CLI_PAGE.read_text()
    assert cli_reference.render() in text, "run `python -m ci_onnx.cli.docs_reference --write`"


def test_the_command_table_names_every_option_of_every_command() -> None:
    block = cli_reference.render()
    for name, command in cli.commands.items():
        (row,) = [line for line in block.splitlines() if line.startswith(f"| `onnx-gate {name} ")]
        for param in command.params:
            if isinstance(param, click.Option) and "--help" not in param.opts:
                assert max(param.opts, key=len) in row, (name, param.opts)
    for flag in ("--no-cache", "--plan FILE", "--onnx MODEL.onnx", "--android", "--fork-safe"):
        assert flag in block


def test_every_input_and_output_of_each_action_is_in_the_action_page() -> None:
    text = ACTION_PAGE.read_text()
    inputs = text.split("## Inputs", 1)[1].split("## Outputs", 1)[0]
    outputs = text.split("## Outputs", 1)[1]
    named_in = set(re.findall(r"^\| `([a-z0-9-]+)` \|", inputs, re.M))
    named_out = set(re.findall(r"^\| `([a-z0-9-]+)` \|", outputs, re.M))
    for action in ("action.yml", "slim/action.yml", "runner/action.yml"):
        spec = YAML(typ="safe").load((REPO / action).read_text())
        assert set(spec["inputs"]) <= named_in, (action, sorted(set(spec["inputs"]) - named_in))
        assert set(spec.get("outputs") or {}) <= named_out, action
    said = YAML(typ="safe").load((REPO / "action.yml").read_text())["inputs"]["command"]["description"]
    for command in ("plan", "export", "verify", "report", "nightly"):
        assert command in said, command


def test_range_is_one_semantics_everywhere_high_excluded() -> None:
    """init wrote [low, high] and the README [low, high): the random integers never reach high."""
    import numpy as np

    from ci_onnx.config import schema
    from ci_onnx.contracts.bundle import TensorSpec
    from ci_onnx.export import inputs

    drawn = inputs.random_inputs([TensorSpec("ids", ("batch", 64), "int64", (0, 3))], 64, 0, {})["ids"]
    assert set(np.unique(drawn)) == {0, 1, 2}
    described = schema()["properties"]["model"]["properties"]["inputs"]["additionalProperties"]
    assert described["properties"]["range"]["description"].startswith("[low, high)")
    template = (REPO / "templates" / "onnx-gate.yml.j2").read_text()
    pages = [p.read_text() for p in (REPO / "docs").rglob("*.md")]
    for text in (template, (REPO / "README.md").read_text(), *pages):
        assert "[low, high]" not in text
    assert "`range: [low, high)`" in template
