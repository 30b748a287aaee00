"""Property-based fuzzing (hypothesis, a few seconds each in CI) of the readers that face untrusted bytes.

The JUnit reader never raises; the config loader raises only ConfigError; the result reader only
UsageError; the collector turns whatever it finds into entries and problems. Longer sessions with
atheris: see tests/robustness/README.md.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ci_onnx import config
from ci_onnx.contracts.errors import ConfigError, GateError, UsageError
from ci_onnx.contracts.results import read_result
from ci_onnx.report import junit_reader
from ci_onnx.report.collect import collect
from tests.robustness import corpus

FUZZ = settings(
    max_examples=int(os.environ.get("ONNX_GATE_FUZZ_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
"""150 examples each in CI (a few seconds); ONNX_GATE_FUZZ_EXAMPLES=5000 for a longer local session."""

XML_PIECES = st.sampled_from(
    [
        "<testsuites>", "</testsuites>", "<testsuite name='s'>", "</testsuite>", "<testcase name='t'>",
        "</testcase>", "<testcase/>", "<failure message='m'/>", "<error/>", "<skipped/>", "time='1e999'",
        "<?xml version='1.0' encoding='latin-1'?>", "<?xml version='1.0' encoding='bogus'?>", "&amp;",
        "&undefined;", "<!DOCTYPE x [<!ENTITY a 'b'>]>", "&a;", "\x00", "\xff", "<![CDATA[x]]>", "<", ">",
    ]
)  # fmt: skip


def _xml_bytes() -> st.SearchStrategy[bytes]:
    built = st.lists(XML_PIECES, max_size=30).map(
        lambda parts: "".join(parts).encode("utf-8", "surrogatepass")
    )
    return st.one_of(st.binary(max_size=2000), built)


@FUZZ
@given(data=_xml_bytes())
def test_the_junit_reader_never_raises(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "junit.xml"
        path.write_bytes(data)
        summary = junit_reader.read([path])
    assert summary.files == 1
    assert summary.tests >= len(summary.cases)


YAML_PIECES = st.sampled_from(
    [
        "version: 1\n", "model:\n", "  factory: net.py:build\n", "  outputs: [logits]\n", "export:\n",
        "  opsets: [17.0]\n", "  timeout_s: 1e999\n", "verify:\n", "  tolerance: {atol: .inf}\n",
        "  batch_sizes: [1.0, -1]\n", "? [a, b]\n: 1\n", "&a [1, 2]\n", "*a\n", "b: &b [*a, *a]\n", "!!binary x\n",
        "\t", "\x07", "\x00", "'", '"', "[", "]", "{", "}", "- ", ": ", "\n", "~\n", "2001-12-14\n", "0x1F\n",
    ]
)  # fmt: skip


@FUZZ
@given(
    text=st.one_of(
        st.text(max_size=500),
        st.lists(YAML_PIECES, max_size=25).map("".join),
        st.builds(
            lambda a, b: corpus._yaml(corpus.BASE).decode()[:a] + b, st.integers(0, 600), st.text(max_size=40)
        ),
    )
)
def test_the_config_loader_raises_only_config_error(text: str) -> None:
    try:
        config.parse(text, Path("onnx-gate.yml"))
    except ConfigError as exc:
        assert "\n" not in exc.message.strip() and exc.message.startswith("onnx-gate.yml")


@FUZZ
@given(raw=st.binary(max_size=1000))
def test_the_config_file_reader_raises_only_config_error(raw: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "onnx-gate.yml"
        path.write_bytes(raw)
        with contextlib.suppress(ConfigError):
            config.load(path)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=30,
)


def _result_like() -> st.SearchStrategy[bytes]:
    keys = st.sampled_from(
        ["schema_version", "target", "status", "summary", "checks", "bundle", "started_at"]
    )
    objects = st.dictionaries(keys, JSON_VALUES, max_size=7).map(lambda d: json.dumps(d).encode())
    return st.one_of(st.binary(max_size=300), objects, JSON_VALUES.map(lambda v: json.dumps(v).encode()))


@FUZZ
@given(data=_result_like())
def test_the_result_reader_raises_only_usage_error(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "r.json"
        path.write_bytes(data)
        with contextlib.suppress(UsageError):
            read_result(path)


@FUZZ
@given(files=st.lists(_result_like(), min_size=1, max_size=4))
def test_collect_turns_any_file_into_entries_or_problems(files: list[bytes]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for i, data in enumerate(files):
            (Path(tmp) / f"{i}.json").write_bytes(data)
        try:
            got = collect([Path(tmp)])
        except GateError as exc:  # only "more than N files" and "no such directory" may be raised
            raise AssertionError(exc.message) from None
    assert all(p for p in got.problems)
