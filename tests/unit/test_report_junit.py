"""The lenient JUnit reader against samples from other tools and their expected parses."""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

import pytest

from ci_onnx.report import junit_reader

DATA = Path(__file__).parent.parent / "data" / "junit"
SAMPLES = [
    "minimal-attributes",
    "junit.multiresult",
    "testsuite-in-testsuite",
    "with-xml-entities",
    "junit.fail",
]


def expected_cases(name: str) -> list[dict[str, Any]]:
    """The ``cases`` of a ``*.results`` file (a Python repr of the reference parser's result)."""
    unit = types.SimpleNamespace(
        ParsedUnitTestResults=dict, UnitTestSuite=dict, UnitTestCase=dict, ParseError=dict
    )
    namespace = {"publish": types.SimpleNamespace(unittestresults=unit)}
    parsed = eval((DATA / f"{name}.results").read_text(), namespace)  # test data we vendored, not input
    return list(parsed["cases"])


def norm(text: str | None) -> str | None:
    return " ".join(text.split()) if text else None


@pytest.mark.parametrize("name", SAMPLES)
def test_cases_match_the_reference_parse(name: str) -> None:
    got = junit_reader.read_file(DATA / f"{name}.xml")
    want = expected_cases(name)
    assert not got.parse_errors
    assert [(c.class_name, c.name, c.result) for c in got.cases] == [
        (w["class_name"] or "", w["test_name"], w["result"]) for w in want
    ]
    assert [norm(c.message) for c in got.cases] == [norm(w["message"]) for w in want]
    assert [norm(c.content) for c in got.cases] == [norm(w["content"]) for w in want]
    assert [c.time for c in got.cases] == [w["time"] for w in want]


def test_most_severe_element_wins() -> None:
    got = junit_reader.read_file(DATA / "junit.multiresult.xml")
    assert [c.result for c in got.cases] == ["error", "failure", "skipped", "success"]
    assert (got.passed, got.failed, got.errors, got.skipped) == (1, 1, 1, 1)


def test_nested_suites_are_all_counted() -> None:
    got = junit_reader.read_file(DATA / "testsuite-in-testsuite.xml")
    assert got.suites == 4 and got.tests == 5


@pytest.mark.parametrize(
    ("name", "says"), [("non-junit", "not JUnit XML"), ("corrupt-xml", "not readable as XML")]
)
def test_what_is_not_junit_is_a_parse_error_not_a_crash(name: str, says: str) -> None:
    got = junit_reader.read_file(DATA / f"{name}.xml")
    assert got.tests == 0
    assert len(got.parse_errors) == 1 and says in got.parse_errors[0]
    assert got.errors == 1  # a parse error counts against the gate


def test_read_walks_directories(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    for name in ("minimal-attributes", "junit.fail"):
        (tmp_path / "a" / "b" / f"{name}.xml").write_bytes((DATA / f"{name}.xml").read_bytes())
    got = junit_reader.read([tmp_path])
    assert got.files == 2
    assert got.tests == 4 + 5
    assert {c.file for c in got.failing} == {"minimal-attributes.xml", "junit.fail.xml"}
