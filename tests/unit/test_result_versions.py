"""A TargetResult carries its runner's Observation (schema version 2); a version 1 result, as a
baseline written by an older onnx-gate is, still reads, its copied figures moved into an observation.

The version 1 files are real: written by onnx-gate before the change (a GRU with its initial state,
one cell that passed with sweeps, one whose export failed)."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import jsonschema
import pytest

from ci_onnx.contracts import schema, serde
from ci_onnx.contracts.errors import UsageError
from ci_onnx.contracts.gate_settings import GateSettings
from ci_onnx.contracts.results import RESULT_SCHEMA_VERSION, LatencyStat, read_result, write_result
from ci_onnx.report import diff
from tests.support.results import observed

V1 = Path(__file__).parent.parent / "data" / "results-v1"
COPIED = (
    "environment",
    "placement",
    "latency",
    "session_create_ms",
    "peak_rss_mb",
    "serving",
    "sweep_latency",
)


def test_a_version_1_result_reads_with_every_copied_figure_in_its_observation() -> None:
    data = json.loads((V1 / "passed.json").read_text())
    assert data["schema_version"] == 1
    result = read_result(V1 / "passed.json")
    obs = result.observation
    assert obs is not None and obs.target_id == result.target.id
    for key in COPIED:
        assert serde.to_json(getattr(obs, key)) == data[key], key
    assert obs.sweep_latency and obs.serving is not None and obs.placement is not None
    assert [c.name for c in result.checks] == [c["name"] for c in data["checks"]]


def test_a_version_1_result_where_nothing_ran_has_no_observation() -> None:
    result = read_result(V1 / "export-failed.json")
    assert result.export_failed and result.observation is None
    assert result.observed.latency == () and result.observed.environment is None
    assert result.ran_release() == result.target.runtime


def test_written_again_it_is_version_2_and_valid_against_the_schema(tmp_path: Path) -> None:
    again = read_result(write_result(tmp_path, read_result(V1 / "passed.json")))
    data = json.loads((tmp_path / f"{again.target.id}.json").read_text())
    assert data["schema_version"] == RESULT_SCHEMA_VERSION == 2
    assert not set(COPIED) & set(data), "the figures live in the observation only"
    jsonschema.validate(data, schema.load_schema("target-result.schema.json"))
    assert again == read_result(V1 / "passed.json")


def test_a_version_1_baseline_is_compared_figure_for_figure_with_a_version_2_head() -> None:
    base = read_result(V1 / "passed.json")
    stats = base.observed.latency
    slower = tuple(_times(s, 3) for s in stats)
    head = observed(
        dataclasses.replace(base, schema_version=RESULT_SCHEMA_VERSION, bundle="head"), latency=slower
    )
    settings = GateSettings(stored_figures="block")
    found = {f.what for f in diff.compare(head, base, settings) if f.regression}
    assert {"p50 latency, batch 1", "p50 latency, batch 4"} <= found, found
    assert not [f for f in diff.compare(base, base, settings) if f.regression]


def test_a_version_1_result_that_is_not_one_is_still_refused_by_name(tmp_path: Path) -> None:
    shutil.copy(V1 / "passed.json", tmp_path / "r.json")
    data = json.loads((tmp_path / "r.json").read_text())
    data["latency"] = "fast"
    (tmp_path / "r.json").write_text(json.dumps(data))
    with pytest.raises(UsageError, match=r"r\.json: not a TargetResult"):
        read_result(tmp_path / "r.json")
    data["schema_version"] = 3
    (tmp_path / "r.json").write_text(json.dumps(data))
    with pytest.raises(UsageError, match=r"schema_version 3 .*upgrade onnx-gate"):
        read_result(tmp_path / "r.json")


def test_the_report_reads_a_version_1_baseline_beside_version_2_results(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from ci_onnx.cli import cli

    base = read_result(V1 / "passed.json")
    slower = tuple(_times(s, 3) for s in base.observed.latency)
    write_result(
        tmp_path / "head" / "results", observed(dataclasses.replace(base, bundle="head"), latency=slower)
    )
    (tmp_path / "base" / "results").mkdir(parents=True)
    shutil.copy(V1 / "passed.json", tmp_path / "base" / "results" / f"{base.target.id}.json")
    argv = ["report", "--results", str(tmp_path / "head"), "--baseline", str(tmp_path / "base")]
    done = CliRunner().invoke(cli, [*argv, "--out", str(tmp_path / "out"), "--no-publish"])
    assert done.exit_code == 0, done.output  # stored figures warn (gate.stored_figures), never block
    report = (tmp_path / "out" / "report.md").read_text()
    line = next(row for row in report.splitlines() if "| p50 latency, batch 1 |" in row)
    assert "+200 %" in line and "against the base's stored figures" in line, line


def _times(s: LatencyStat, factor: float) -> LatencyStat:
    return dataclasses.replace(
        s, p50_ms=factor * s.p50_ms, samples_ms=tuple(factor * v for v in s.samples_ms)
    )
