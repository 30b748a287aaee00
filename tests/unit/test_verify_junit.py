"""The JUnit writer: valid against the Jenkins junit-10 schema for every kind of verdict."""

from __future__ import annotations

import functools
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema

from ci_onnx.contracts.results import (
    RESULT_SCHEMA_VERSION,
    CheckResult,
    Environment,
    LatencyStat,
    TargetResult,
)
from ci_onnx.contracts.target import Status, Target
from ci_onnx.verify import junit
from tests.support.results import observation

XSD = Path(__file__).parent.parent / "data" / "jenkins-xunit-junit-10.xsd"


@functools.cache
def schema() -> xmlschema.XMLSchema:
    return xmlschema.XMLSchema(XSD)


def assert_valid_junit(path: Path) -> ET.Element:
    errors = [str(e.reason) for e in schema().iter_errors(str(path))]
    assert not errors, errors
    return ET.parse(path).getroot()


def _result(*checks: CheckResult, duration: float = 1234.5678) -> TargetResult:
    return TargetResult(
        schema_version=RESULT_SCHEMA_VERSION,
        target=(target := Target("1.32.0", "openvino", 17, "dynamo")),
        status=Status.FAILED,
        summary="parity[logits]: 3 of 10 out",
        checks=checks,
        observation=observation(
            target.id,
            Environment("1.32.0", ("CPUExecutionProvider",), ("CPUExecutionProvider",), "Linux"),
            latency=(LatencyStat(8, 1.0, 2.0, 3.0, 20),),
            session_create_ms=12.5,
            peak_rss_mb=100.0,
        ),
        started_at="2026-01-01T00:00:00+00:00",
        duration_s=duration,
    )


def test_every_status_becomes_valid_junit(tmp_path: Path) -> None:
    result = _result(
        CheckResult("export", Status.PASSED, "ok"),
        CheckResult("load", Status.EXPECTED, "onnxruntime 1.17 loads opset <= 20"),
        CheckResult("provider", Status.FAILED, "asked for X, got Y", {"requested": "X"}),
        CheckResult("parity[logits]", Status.FAILED, "3 of 10 out", {"max_abs": 0.5, "nan": None}),
        CheckResult("runner", Status.ERROR, "killed by SIGSEGV \x1b[1;31mred\x1b[m \x07bell <&>"),
        CheckResult("latency", Status.SKIPPED, "nothing ran"),
    )
    path = junit.write(tmp_path, result)
    assert path.name == "ort1.32.0-openvino-op17-dynamo.xml"
    root = assert_valid_junit(path)
    suite = root.find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("skipped")) == (
        "6",
        "2",
        "1",
        "2",
    )
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert list(cases) == ["export", "load", "provider", "parity[logits]", "runner", "latency"]
    skipped = cases["load"].find("skipped")
    assert skipped is not None and skipped.get("message", "").startswith("expected: onnxruntime 1.17")
    error = cases["runner"].find("error")
    assert error is not None and error.get("message") == "killed by SIGSEGV red bell <&>"
    out = cases["parity[logits]"].find("system-out")
    assert out is not None and '"max_abs": 0.5' in (out.text or "")
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["latency_b8_p50_ms"] == "1" and props["status"] == "failed"


@pytest.mark.parametrize("seconds", [0.0, 0.0004, 59.9996, 123456.789])
def test_times_fit_the_schema(tmp_path: Path, seconds: float) -> None:
    assert_valid_junit(junit.write(tmp_path, _result(CheckResult("load", Status.PASSED), duration=seconds)))


def test_a_result_with_no_checks_is_still_valid(tmp_path: Path) -> None:
    root = assert_valid_junit(junit.write(tmp_path, _result()))
    assert root.get("tests") == "0"
