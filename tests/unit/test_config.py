"""Config loading: a good file types cleanly; each bad one gets one line with file, line, key, exit 2."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from ci_onnx import config
from ci_onnx.cli import cli
from ci_onnx.contracts.errors import ConfigError
from tests.conftest import EXAMPLE_CONFIG

GOOD = """\
version: 1
model:
  factory: model.py:build
  inputs: {image: {shape: [batch, 1, 8, 8]}}
  outputs: [logits]
  dynamic_axes: {image: {0: batch}, logits: {0: batch}}
export: {opsets: [17]}
targets: {runtimes: ["1.20.1"], providers: [cpu]}
"""


def test_example_config_loads_with_defaults_from_the_schema() -> None:
    cfg = config.load(EXAMPLE_CONFIG)
    assert cfg.model.name == "digitnet"
    assert cfg.export.opsets == (17, 18)
    assert cfg.verify.decision is not None and cfg.verify.decision.output == "logits"
    assert cfg.model.dynamic_axes == {"image": {"0": "batch"}, "logits": {"0": "batch"}}
    minimal = config.parse(GOOD, Path("x.yml"))
    schema = config.schema()["properties"]
    assert minimal.verify.random_inputs == schema["verify"]["properties"]["random_inputs"]["default"]
    assert (
        minimal.verify.tolerance.atol
        == schema["verify"]["properties"]["tolerance"]["properties"]["atol"]["default"]
    )
    assert minimal.cpu_fallback_max_time_share == 0.05
    assert minimal.export.exporters == ("dynamo",)


# (what replaces what in GOOD, the message expected, as a regular expression)
BAD = [
    (
        "export: {opsets: [17]}",
        "export: {opset: [17]}",
        r"x\.yml:7: export\.opset: unknown key; did you mean 'opsets'\?",
    ),
    ("version: 1\n", "versoin: 1\n", r"x\.yml:1: versoin: unknown key; did you mean 'version'\?"),
    (
        "providers: [cpu]",
        "providers: [cpuu]",
        r"x\.yml:8: targets\.providers\.0: 'cpuu' is not one of: .*did you mean 'cpu'\?",
    ),
    (
        'runtimes: ["1.20.1"]',
        'runtimes: ["newest"]',
        r"x\.yml:8: targets\.runtimes\.0: 'newest' is not a runtime spec; use an exact version",
    ),
    (
        "export: {opsets: [17]}",
        "export: {opsets: [seventeen]}",
        r"x\.yml:7: export\.opsets\.0: 'seventeen' is not of type 'integer'",
    ),
    ("  outputs: [logits]\n", "", r"x\.yml:2: model: give either `factory` with `inputs` and `outputs`"),
    (
        "  factory: model.py:build",
        "  factory: model.py",
        r"x\.yml:3: model\.factory: 'model\.py' names no callable; .*e\.g\. `model\.py:build`",
    ),
    (
        "{image: {0: batch}, logits",
        "{imagee: {0: batch}, logits",
        r"x\.yml:6: model\.dynamic_axes\.imagee: 'imagee' is not a declared input or output; did you mean 'image'\?",
    ),
    (
        "{image: {0: batch}, logits",
        "{image: {4: batch}, logits",
        r"x\.yml:6: model\.dynamic_axes\.image: axis 4 is out of range",
    ),
    (
        "{shape: [batch, 1, 8, 8]}",
        "{shape: [batch, 16], dtype: int64}",
        r"x\.yml:4: model\.inputs\.image: integer input needs `range: \[low, high\)`.*high excluded",
    ),
    (
        "export: {opsets: [17]}",
        "export: {opsets: [17]}\nverify: {decision: {output: logit}}",
        r"x\.yml:8: verify\.decision\.output: 'logit' is not a declared input or output; did you mean 'logits'\?",
    ),
    ("version: 1\n", "version: 2\n", r"x\.yml:1: version: 1 was expected"),
    (
        'runtimes: ["1.20.1"]',
        "runtimes: [1.20, latest]",
        r'x\.yml:8: targets\.runtimes\.0: YAML reads 1\.20 as the number 1\.2; quote it: "1\.20"$',
    ),
    (
        'runtimes: ["1.20.1"]',
        'runtimes: ["1.20.1"], exclude: [{runtime: 1.17}]',
        r'x\.yml:8: targets\.exclude\.0\.runtime: YAML reads 1\.17 as the number 1\.17; quote it: "1\.17"$',
    ),
    (
        "{shape: [batch, 1, 8, 8]}",
        "{shape: [batch, 1, 8, 8], dtype: float}",
        r"x\.yml:4: model\.inputs\.image\.dtype: 'float' is torch's name for float32; write `dtype: float32`$",
    ),
    ("export: {opsets: [17]}", "export: {opsets: [17]", r"x\.yml:\d+: not valid YAML"),
]


@pytest.mark.parametrize(("old", "new", "expected"), BAD, ids=[b[2][:40] for b in BAD])
def test_bad_config_names_line_and_key(old: str, new: str, expected: str) -> None:
    assert old in GOOD
    with pytest.raises(ConfigError, match=expected) as info:
        config.parse(GOOD.replace(old, new, 1), Path("x.yml"))
    assert "\n" not in info.value.message
    assert info.value.exit_code == 2


def test_bad_config_through_the_cli_is_one_line_and_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "onnx-gate.yml"
    path.write_text(GOOD.replace("export: {opsets: [17]}", "export: {opset: [17]}"))
    result = CliRunner().invoke(cli, ["plan", "--config", str(path)])
    assert result.exit_code == 2
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert lines == [f"onnx-gate: error: {path}:7: export.opset: unknown key; did you mean 'opsets'?"]


def test_missing_and_empty_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"no such file; pass --config or run `onnx-gate init`"):
        config.load(tmp_path / "nope.yml")
    (tmp_path / "empty.yml").write_text("")
    with pytest.raises(ConfigError, match="the file is empty"):
        config.load(tmp_path / "empty.yml")


def test_onnx_only_model_needs_no_inputs() -> None:
    text = textwrap.dedent(
        """\
        version: 1
        model: {onnx: model.onnx, test_data: data}
        """
    )
    cfg = config.parse(text, Path("x.yml"))
    assert cfg.onnx_only and cfg.export.exporters == ("onnx",)


def test_the_configuration_page_is_generated_from_the_schema() -> None:
    from ci_onnx.config import reference as config_reference

    page = (EXAMPLE_CONFIG.parents[2] / "docs" / "reference" / "configuration.md").read_text()
    assert config_reference.render() in page, "run `python -m ci_onnx.cli.docs_reference --write`"
    assert "`verify.tolerance.atol` | number | `0.0001`" in page
