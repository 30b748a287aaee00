"""The plan's GitHub outputs put every runnable cell in exactly one matrix entry: container or runner."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from ci_onnx import plan as planning
from ci_onnx.contracts.target import Target
from ci_onnx.plan import cijobs


def _plan(targets: list[Target], ci: cijobs.CiSettings | None = None) -> planning.Plan:
    return planning.Plan(
        planning.SCHEMA_VERSION, "onnx-gate.yml", "m", tuple(targets), ci=ci or cijobs.CiSettings()
    )


def _targets() -> list[Target]:
    cells = [
        Target(runtime=f"1.{minor}.0", provider=p, opset=17, exporter="dynamo")
        for minor in range(20, 25)
        for p in ("cpu", "openvino", "cuda", "coreml")
    ]
    skipped = dataclasses.replace(cells[0], opset=30, expected_skip="too new")
    return [*cells, skipped]


def _cells(outputs: dict[str, str], prefix: str) -> list[dict[str, object]]:
    return [
        cell
        for key, value in outputs.items()
        if key == prefix or (key.startswith(prefix + "-") and key.removeprefix(prefix + "-").isdigit())
        for cell in json.loads(value)["include"]
    ]


def test_every_runnable_cell_is_in_exactly_one_matrix() -> None:
    plan = _plan(_targets())
    out = cijobs.github_outputs(plan)
    container, runner = _cells(out, "matrix"), _cells(out, "matrix-runner")
    ids = [str(i) for c in container + runner for i in c["targets"]]  # type: ignore[attr-defined]
    assert sorted(ids) == sorted(t.id for t in plan.runnable)
    assert all(c["container"] is True for c in container)
    assert all(c["container"] is False for c in runner)
    assert {p for c in runner for p in c["providers"]} == {"cuda", "coreml"}  # type: ignore[attr-defined]
    assert {p for c in container for p in c["providers"]} == {"cpu", "openvino"}  # type: ignore[attr-defined]
    # one entry per environment: 5 releases × (onnxruntime, onnxruntime-openvino) in the container,
    # and 5 × (onnxruntime-gpu on the GPU's labels, onnxruntime on macOS) on runners
    assert len(container) == 10 and len(runner) == 10
    assert out["container-targets"] == "10" and out["runner-targets"] == "10"
    assert out["targets"] == "20" and out["expected-skips"] == "1" and out["verify-jobs"] == "20"


def test_large_matrices_split_at_256_entries_per_kind() -> None:
    many = [
        Target(runtime=f"1.{i}.0", provider="cpu", opset=7 + j, exporter="dynamo")
        for i in range(20)
        for j in range(14)
    ]
    grouped = cijobs.github_outputs(_plan(many))
    assert grouped["matrices"] == "1" and len(json.loads(grouped["matrix"])["include"]) == 20
    out = cijobs.github_outputs(_plan(many, cijobs.CiSettings(max_cells_per_job=1)))
    assert out["matrices"] == "2" and out["runner-matrices"] == "1"
    assert len(json.loads(out["matrix"])["include"]) == 256
    assert len(json.loads(out["matrix-2"])["include"]) == 280 - 256
    assert out["container-targets-2"] == str(280 - 256)
    assert json.loads(out["matrix-runner"]) == {"include": []} and out["runner-targets"] == "0"
    assert len(_cells(out, "matrix")) == 280


def test_outputs_survive_the_github_output_file(tmp_path: Path) -> None:
    out = cijobs.github_outputs(_plan(_targets()))
    path = tmp_path / "out"
    planning.write_github_output(path, out)
    text = path.read_text()
    assert all(
        f"{key}<<" in text for key in ("matrix", "matrix-runner", "container-targets", "runner-targets")
    )
