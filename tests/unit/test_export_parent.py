"""Which bundles `onnx-gate export` makes, and its bad-input and crash paths (no torch needed)."""

from __future__ import annotations

import dataclasses
import json
import re
import textwrap
from collections.abc import Sequence
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from click.testing import CliRunner

from ci_onnx import config
from ci_onnx.cli import cli
from ci_onnx.contracts.bundle import read_manifest
from ci_onnx.contracts.errors import UsageError
from ci_onnx.contracts.schema import load_schema
from ci_onnx.contracts.target import Status
from ci_onnx.export import CHECKS, parent


def _write(tmp_path: Path, extra: str = "", factory: str = "net.py:build") -> Path:
    (tmp_path / "net.py").write_text("def build():\n    raise SystemExit('never imported by these tests')\n")
    path = tmp_path / "onnx-gate.yml"
    path.write_text(
        "version: 1\n"
        + textwrap.dedent(
            f"""\
            model:
              factory: {factory}
              inputs: {{image: {{shape: [batch, 1, 8, 8]}}}}
              outputs: [logits]
              dynamic_axes: {{image: {{0: batch}}}}
            export: {{opsets: [17, 18], exporters: [dynamo, torchscript]}}
            """
        )
        + textwrap.dedent(extra)
    )
    return path


def _no_plan(patterns: Sequence[str]) -> Sequence[str]:
    raise AssertionError(f"the plan was consulted for {patterns}")


def test_candidates_and_only_by_bundle_key(tmp_path: Path) -> None:
    cfg = config.load(_write(tmp_path))
    jobs = parent.candidates(cfg)
    assert [j.key for j in jobs] == ["op17-dynamo", "op17-torchscript", "op18-dynamo", "op18-torchscript"]
    assert [j.key for j in parent.select(jobs, ["op18-*"], _no_plan)] == ["op18-dynamo", "op18-torchscript"]
    assert parent.select(jobs, [], _no_plan) == jobs


def test_a_derived_precisions_bundle_key_selects_its_job_without_the_plan(tmp_path: Path) -> None:
    """What the export job passes (`only: <bundle key>`): no plan, so no package index is asked."""
    jobs = parent.candidates(config.load(_write(tmp_path)))
    chosen = parent.select(jobs, ["op17-dynamo-fp16"], _no_plan, ("fp32", "fp16"))
    assert [j.key for j in chosen] == ["op17-dynamo"]
    assert [j.key for j in parent.select(jobs, ["op18-torchscript"], _no_plan, ("fp32",))] == [
        "op18-torchscript"
    ]


def test_only_by_target_id_goes_through_the_plan(tmp_path: Path) -> None:
    jobs = parent.candidates(config.load(_write(tmp_path)))
    asked: list[Sequence[str]] = []

    def plan_keys(patterns: Sequence[str]) -> Sequence[str]:
        asked.append(patterns)
        return ["op17-torchscript"]

    chosen = parent.select(jobs, ["ort1.20.1-cpu-op17-torchscript"], plan_keys)
    assert [j.key for j in chosen] == ["op17-torchscript"] and asked == [["ort1.20.1-cpu-op17-torchscript"]]
    with pytest.raises(UsageError, match="selects no bundle"):
        parent.select(jobs, ["ort9*"], lambda _: [])


@pytest.mark.parametrize(
    ("extra", "factory", "message"),
    [
        ("", "missing.py:build", "model.factory: .*missing.py does not exist"),
        ("  samples: nope.npz\n", "net.py:build", "model.samples: .*nope.npz does not exist"),
        (
            "  samples: bad.npz\n",
            "net.py:build",
            r"model.samples: array 'image' in bad.npz has shape \[3, 8, 8\]",
        ),
    ],
)
def test_bad_input_is_one_line_naming_the_key_and_exit_2(
    tmp_path: Path, extra: str, factory: str, message: str
) -> None:
    np.savez(tmp_path / "bad.npz", image=np.zeros((3, 8, 8), np.float32))
    path = _write(tmp_path, "", factory)
    if extra:  # samples belong under model:
        text = path.read_text().replace("  outputs: [logits]\n", "  outputs: [logits]\n" + extra)
        path.write_text(text)
    result = CliRunner().invoke(cli, ["export", "--config", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("onnx-gate: error: ")
    assert re.search(message, lines[0]), lines[0]
    assert not (tmp_path / "out").exists()


def test_an_export_that_does_not_finish_becomes_a_failed_export_finding(tmp_path: Path) -> None:
    cfg = config.load(_write(tmp_path))
    cfg = dataclasses.replace(cfg, export=dataclasses.replace(cfg.export, timeout_s=0.05))
    lines: list[str] = []
    (outcome,) = parent.export_all(cfg, [parent.Job(18, "dynamo")], tmp_path / "out", lines.append)
    m = read_manifest(tmp_path / "out" / "op18-dynamo")
    manifest_json = json.loads((tmp_path / "out" / "op18-dynamo" / "manifest.json").read_text())
    jsonschema.validate(manifest_json, load_schema("manifest.schema.json"))
    assert [f.name for f in m.findings] == list(CHECKS)
    export = m.findings[0]
    assert (
        export.status is Status.FAILED
        and "timed out" in export.message
        and "export.timeout_s" in export.message
    )
    assert all(f.status is Status.SKIPPED for f in m.findings[1:])
    assert (m.opset, m.node_count, m.files) == (0, 0, {})
    assert parent.exit_code([outcome]) == 1
    assert lines[0] == "[1/1] op18-dynamo: exporting…" and lines[1].startswith(
        "[1/1] op18-dynamo: FAILED [export] export: the dynamo export did not finish"
    )


def test_exports_run_side_by_side_and_report_in_the_jobs_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both children are running at once (each waits for the other at a barrier, which one after
    the other would break), and the outcomes keep the jobs' order though the second ends first."""
    import threading

    cfg = config.load(_write(tmp_path))
    both = threading.Barrier(2, timeout=30)
    ended: list[str] = []

    def export_one(cfg: config.Config, job: parent.Job, bundle_dir: Path) -> parent.Outcome:
        both.wait()
        if job.opset == 17:
            both.wait()  # the other ends first
        ended.append(job.key)
        if job.opset == 18:
            both.wait()
        return parent.Outcome(job, bundle_dir, None, 0.0)  # type: ignore[arg-type]

    monkeypatch.setattr(parent, "export_one", export_one)
    monkeypatch.setattr(parent, "describe", lambda outcome: "done")
    monkeypatch.setattr(parent, "binding_lines", lambda manifest: [])
    jobs = [parent.Job(17, "dynamo"), parent.Job(18, "dynamo")]
    outcomes = parent.export_all(cfg, jobs, tmp_path / "out", lambda line: None, parallel=2)
    assert ended == ["op18-dynamo", "op17-dynamo"]
    assert [o.job.key for o in outcomes] == ["op17-dynamo", "op18-dynamo"]


def test_a_config_error_in_one_child_starts_no_further_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ci_onnx.contracts.errors import ConfigError

    cfg = config.load(_write(tmp_path))
    started: list[str] = []

    def export_one(cfg: config.Config, job: parent.Job, bundle_dir: Path) -> parent.Outcome:
        started.append(job.key)
        raise ConfigError(f"{job.key}: model.factory: no such function")

    monkeypatch.setattr(parent, "export_one", export_one)
    jobs = [parent.Job(o, "dynamo") for o in (15, 16, 17, 18)]
    with pytest.raises(ConfigError, match=r"op15-dynamo: model\.factory"):
        parent.export_all(cfg, jobs, tmp_path / "out", lambda line: None, parallel=2)
    assert len(started) <= 3, started  # the two running, and at most one taken up as the first ended


@pytest.mark.parametrize(
    ("cpus", "available_mb", "expected"),
    [(2, 64_000, 2), (16, 64_000, 4), (16, 1_000, 1), (16, 0, 4), (1, 64_000, 1)],
)
def test_as_many_children_as_cpus_jobs_and_memory_allow(
    tmp_path: Path, cpus: int, available_mb: float, expected: int
) -> None:
    cfg = config.load(_write(tmp_path))  # no weight files: a child is its base alone
    assert parent.workers(cfg, 4, cpus=cpus, available_mb=available_mb) == expected
