"""Defaults and exit codes are declared once: the config schema holds every default, and each place
that carries a setting past the config (VerifyOptions, Tolerance, the Python runner, the starter
onnx-gate.yml, the CLI) agrees with it; ci_onnx.contracts.errors names the exit codes."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ci_onnx import action, config
from ci_onnx.contracts import defaults, errors
from ci_onnx.contracts.bundle import Tolerance
from ci_onnx.contracts.verify_options import VerifyOptions, options_from
from ci_onnx.observer import ort
from ci_onnx.orchestration import scaffold

MINIMAL = """\
version: 1
model:
  factory: model.py:build
  inputs: {image: {shape: [batch, 1, 8, 8]}}
  outputs: [logits]
  dynamic_axes: {image: {0: batch}, logits: {0: batch}}
targets: {runtimes: ["1.20.1"]}
"""


def _leaves(node: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Every dotted key of the schema that declares a scalar default."""
    for name, child in node.get("properties", {}).items():
        key = f"{prefix}{name}"
        if isinstance(child.get("default"), (bool, int, float, str)):
            yield key, child["default"]
        yield from _leaves(child, key + ".")


SCHEMA_DEFAULTS = dict(_leaves(config.schema()))


def test_the_defaults_module_reads_the_schema_config_validates_with() -> None:
    assert json.loads(defaults.CONFIG_SCHEMA.read_text()) == config.schema()
    assert defaults.of("verify.latency_runs") == SCHEMA_DEFAULTS["verify.latency_runs"]
    with pytest.raises(KeyError):
        defaults.of("verify.no_such_key")


def test_every_verify_option_that_is_a_config_key_takes_the_schemas_default() -> None:
    leaf_names = {key.rsplit(".", 1)[-1]: key for key in SCHEMA_DEFAULTS}
    checked = 0
    for field in dataclasses.fields(VerifyOptions):
        key = field.metadata.get("config")
        if key is None:
            # a setting with the name of a config key and a default of its own would be a second source
            assert not (field.name in leaf_names and isinstance(field.default, (bool, int, float, str))), (
                f"VerifyOptions.{field.name}: declare its default as _from_config({leaf_names[field.name]!r}, …)"
            )
            continue
        assert field.default == SCHEMA_DEFAULTS[key], field.name
        assert type(field.default).__name__ == field.type, field.name  # 600 in JSON, 600.0 here
        checked += 1
    assert checked >= 4


def test_verify_options_agree_wherever_they_come_from() -> None:
    cfg = config.parse(MINIMAL, Path("x.yml"))
    assert options_from(None) == VerifyOptions()
    from_config = options_from(cfg)
    assert from_config.triage_config == "x.yml"  # where the triage finds the factory: no setting of its own
    assert dataclasses.replace(from_config, triage_config="") == VerifyOptions()
    assert options_from(None, timeout_s=5) == dataclasses.replace(VerifyOptions(), timeout_s=5)


def test_tolerances_agree_in_the_schema_the_config_and_the_manifest() -> None:
    cfg = config.parse(MINIMAL, Path("x.yml"))
    assert Tolerance() == Tolerance(
        SCHEMA_DEFAULTS["verify.tolerance.atol"], SCHEMA_DEFAULTS["verify.tolerance.rtol"]
    )
    assert cfg.verify.tolerance == Tolerance()


def test_the_python_runner_times_as_many_runs_as_the_config_says() -> None:
    assert ort.Options(ep="CPUExecutionProvider").latency_runs == VerifyOptions().latency_runs


def test_the_starter_config_writes_the_schemas_defaults(tmp_path: Path) -> None:
    """`onnx-gate init` spells some defaults out for the reader; they are the schema's."""
    cfg = config.parse(scaffold.config_file(), tmp_path / "onnx-gate.yml")
    assert cfg.verify.tolerance == Tolerance()
    assert cfg.verify.random_inputs == SCHEMA_DEFAULTS["verify.random_inputs"]
    assert cfg.verify.seed == SCHEMA_DEFAULTS["verify.seed"]
    assert list(cfg.verify.batch_sizes) == defaults.of("verify.batch_sizes")
    assert cfg.cpu_fallback_max_time_share == SCHEMA_DEFAULTS["budgets.cpu_fallback.max_time_share"]


def test_exit_codes_are_the_errors_own() -> None:
    assert (errors.EXIT_PASS, errors.EXIT_FAIL, errors.EXIT_USAGE, errors.EXIT_INTERNAL) == (0, 1, 2, 3)
    assert errors.ConfigError("x").exit_code == errors.UsageError("x").exit_code == errors.EXIT_USAGE
    assert errors.EnvironmentProblem("x").exit_code == errors.GateError("x").exit_code == errors.EXIT_INTERNAL
    assert [action.verdict(c) for c in (errors.EXIT_PASS, errors.EXIT_FAIL, errors.EXIT_USAGE)] == [
        "pass",
        "fail",
        "error",
    ]


def test_the_cli_offers_the_scaffolds_default_action() -> None:
    from ci_onnx.cli import cli

    init = cli.commands["init"]
    (action_option,) = [p for p in init.params if p.name == "action"]
    assert action_option.default == scaffold.DEFAULT_ACTION


def test_the_precisions_are_the_targets_wherever_the_config_names_them() -> None:
    """ci_onnx.contracts.target declares the precisions; the schema (hand-written, the config's contract) must
    offer exactly those, and derived ones' tolerances exactly the derived ones."""
    from ci_onnx.contracts.target import DERIVED_PRECISIONS, PRECISIONS

    props = config.schema()["properties"]
    assert tuple(props["export"]["properties"]["precisions"]["items"]["enum"]) == PRECISIONS
    by_precision = props["verify"]["properties"]["precision_tolerance"]["properties"]
    assert tuple(by_precision) == DERIVED_PRECISIONS
