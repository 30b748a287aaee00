"""One vocabulary for verdicts: CheckResult for every check (an export's findings and a target's
checks), Status for every verdict (a check's, a target's, and the report's *missing*); the JSON that
bundles and results hold keeps its shape."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from ci_onnx.contracts import bundle, serde
from ci_onnx.contracts.results import CheckResult, read_result, write_result
from ci_onnx.contracts.target import Status, Target
from ci_onnx.report import collect
from ci_onnx.verify import judge
from tests import bundles

FINDING_KEYS = ["name", "status", "message", "figures", "warnings"]
"""The keys an export finding has always had in manifest.json."""


def test_a_manifest_keeps_the_findings_json_old_bundles_hold(tmp_path: Path) -> None:
    b = bundles.mlp_bundle(tmp_path / "mlp")
    manifest = bundle.read_manifest(b)
    warned = CheckResult(
        "export", Status.PASSED, "exported", {"s": 1.0}, warnings=("TracerWarning at x.py:3",)
    )
    bundle.write_manifest(b, dataclasses.replace(manifest, findings=(warned,)))
    data = json.loads((b / bundle.MANIFEST).read_text())
    assert [list(f) for f in data["findings"]] == [FINDING_KEYS]
    assert data["findings"][0]["warnings"] == ["TracerWarning at x.py:3"]
    # a bundle written before the two types were one: the same keys, read into CheckResult
    old = dict(
        data,
        findings=[{"name": "checker", "status": "passed", "message": "ok", "figures": {}, "warnings": []}],
    )
    (b / bundle.MANIFEST).write_text(json.dumps(old))
    (read,) = bundle.read_manifest(b, verify_hashes=False).findings
    assert read == CheckResult("checker", Status.PASSED, "ok")


def test_a_result_check_keeps_its_json_and_old_results_read(tmp_path: Path) -> None:
    timed = CheckResult("runner", Status.ERROR, "killed by SIGSEGV", duration_s=1.5)
    assert list(serde.to_json(timed)) == ["name", "status", "message", "figures", "duration_s"]
    assert "duration_s" not in serde.to_json(CheckResult("load", Status.PASSED))  # 0 is the default
    assert serde.from_json(CheckResult, serde.to_json(timed)) == timed
    old = {"name": "load", "status": "passed", "message": "", "figures": {}, "duration_s": 0.0}
    assert serde.from_json(CheckResult, old) == CheckResult("load", Status.PASSED)


def test_a_target_result_does_not_carry_the_exporters_warnings(tmp_path: Path) -> None:
    b = bundles.mlp_bundle(tmp_path / "mlp")
    manifest = dataclasses.replace(
        bundle.read_manifest(b), findings=(CheckResult("export", Status.PASSED, "ok", warnings=("w",)),)
    )
    (check,) = judge.export_checks(manifest)
    assert check == CheckResult("export", Status.PASSED, "ok")
    written = write_result(
        tmp_path / "results", judge.result(Target("1.24.1", "cpu", 17, "onnx"), manifest, [check])
    )
    assert "warnings" not in json.loads(written.read_text())["checks"][0]
    assert read_result(written).checks == (check,)


@pytest.mark.parametrize("status", list(Status))
def test_missing_is_a_failing_status_like_failed_and_error(status: Status) -> None:
    assert status.failing == (status in (Status.FAILED, Status.ERROR, Status.MISSING))


def test_the_two_shapes_are_gone() -> None:
    assert not hasattr(bundle, "Finding")
    assert not hasattr(collect, "Outcome")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("runtime", "1.20.1\n## ✅ onnx-gate: all 9 targets passed"),
        ("runtime", "1.20.1</details><script>alert(1)</script>"),
        ("runtime", "../../etc"),
        ("runtime", "latest"),
        ("provider", "cpu\n<!-- onnx-gate:report -->"),
        ("provider", "CPU"),
        ("runner", "web;rm"),
        ("session_options", "x y"),
        ("opset", -1),
        ("api_level", True),
    ],
)
def test_a_target_part_outside_its_grammar_is_refused(field: str, value: object) -> None:
    """What a plan, a result or a fork supplies becomes a Target only if every part fits the id."""
    from ci_onnx.contracts.target import Target

    parts: dict[str, object] = {"runtime": "1.20.1", "provider": "cpu", "opset": 17, "exporter": "dynamo"}
    with pytest.raises(ValueError, match=field):
        Target(**{**parts, field: value})  # type: ignore[arg-type]
