"""Fork text in the trusted comment: hostile strings put in every field a result or a JUnit file carries,
rendered by `onnx-gate report` as CI runs it, and every place they would act counted.

A payload is *rendered* when it does what it says in the output rather than reading as text: a
heading, an HTML tag, the comment's marker, a link or image, an @mention, a split table row, a
workflow command of its own, or a message past the cap. The suite's figure is that count (zero).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from ci_onnx import plan as planning
from ci_onnx.cli import cli
from ci_onnx.contracts import escape
from ci_onnx.contracts.results import write_result
from tests.golden import scenarios

BIG = 5_000_000
"""A summary this long (5 MB) must come out capped everywhere (the issue's was 50 MB)."""
PAYLOADS: dict[str, str] = {
    "heading": "x\n## ✅ onnx-gate: all 9 targets passed PWN\n",
    "heading-at-start": "## ✅ onnx-gate: all 9 targets passed PWN",
    "html": "</details><script>alert('PWN')</script><img src=x onerror=PWN>",
    "marker": "<!-- onnx-gate:report --> PWN",
    "link": "[PWN click here](https://e.vil/x)",
    "image": "![PWN](https://e.vil/pixel.png)",
    "reference": "[PWN]: https://e.vil/ref",
    "mention": "@acme/owners PWN please merge",
    "issue-reference": "see acme/other#12 PWN",
    "table": "| PWN injected | cell |",
    "backticks": "`` ` PWN ``` fence",
    "workflow-command": "x\n::error::PWN forged\n::set-output name=verdict::pass",
    "big": "PWN" + "y" * BIG,
}


def _fields() -> dict[str, Callable[[dict[str, Any], str], None]]:
    def summary(r: dict[str, Any], p: str) -> None:
        r["summary"] = p

    def check_name(r: dict[str, Any], p: str) -> None:
        r["checks"][0]["name"] = p

    def check_message(r: dict[str, Any], p: str) -> None:
        r["checks"][0]["message"] = p

    def figures(r: dict[str, Any], p: str) -> None:
        r["checks"][0]["figures"] = {p: p}

    def output_name(r: dict[str, Any], p: str) -> None:
        for row in r.get("parity", []):
            row["output"] = p

    def fallback_op(r: dict[str, Any], p: str) -> None:
        for node in r["observation"]["placement"]["fallback_nodes"]:
            node["op_type"] = p

    def runtime(r: dict[str, Any], p: str) -> None:
        r["target"]["runtime"] = "1.20.1" + p

    def provider(r: dict[str, Any], p: str) -> None:
        r["target"]["provider"] = "openvino" + p

    return {
        "summary": summary,
        "check-name": check_name,
        "check-message": check_message,
        "figures": figures,
        "output-name": output_name,
        "fallback-op": fallback_op,
        "target-runtime": runtime,
        "target-provider": provider,
    }


FIELDS = _fields()
JUNIT_FIELDS = ("label", "file", "message")


@dataclasses.dataclass(frozen=True)
class Case:
    field: str
    name: str
    """A key of PAYLOADS."""

    @property
    def payload(self) -> str:
        return PAYLOADS[self.name]

    @property
    def id(self) -> str:
        return f"{self.field}/{self.name}"


def cases() -> list[Case]:
    return [Case(f, p) for f in [*FIELDS, *(f"junit-{j}" for j in JUNIT_FIELDS)] for p in PAYLOADS]


def _junit(field: str, payload: str) -> str:
    from xml.sax.saxutils import quoteattr

    values = {"label": "t", "file": "tests/test_x.py", "message": "boom", field: payload}
    return (
        f"<testsuite name='s'><testcase name={quoteattr(values['label'])} file={quoteattr(values['file'])}>"
        f"<failure message={quoteattr(values['message'])}/></testcase></testsuite>"
    )


def render_case(case: Case, d: Path) -> dict[str, str]:
    """`onnx-gate report` on results carrying the payload, as a CI step runs it: what it wrote."""
    plan, results = scenarios.tinycnn()
    (d / "plan.json").write_text(planning.to_json(plan))
    for r in results:
        write_result(d / "results", r)
    argv = [
        "report",
        "--results",
        str(d / "results"),
        "--plan",
        str(d / "plan.json"),
        "--out",
        str(d / "out"),
    ]
    argv.append("--no-publish")
    if case.field.startswith("junit-"):
        (d / "junit").mkdir()
        (d / "junit" / "other.xml").write_text(_junit(case.field.removeprefix("junit-"), case.payload))
        argv += ["--junit", str(d / "junit")]
    else:
        failing = next(
            r for r in results if r.status.failing and r.observed.placement is not None and r.parity
        )
        path = d / "results" / f"{failing.target.id}.json"
        data = json.loads(path.read_text())
        FIELDS[case.field](data, case.payload)
        path.write_text(json.dumps(data))
    summary = d / "step-summary.md"
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_OUTPUT": str(d / "output")}
    env.update({k: None for k in ("GITHUB_TOKEN", "GITHUB_EVENT_PATH", "GITHUB_REPOSITORY")})  # type: ignore[misc]
    r = CliRunner().invoke(cli, argv, env=env, catch_exceptions=True)
    out = {
        "stdout": r.output,
        "traceback": "Traceback" in r.output or not isinstance(r.exception, (SystemExit, type(None))),
    }
    for name, path in (("report.md", d / "out" / "report.md"), ("summary.md", summary)):
        out[name] = path.read_text() if path.is_file() else ""
    out["outputs"] = (d / "output").read_text() if (d / "output").is_file() else ""
    return out  # type: ignore[return-value]


_OURS = re.compile(r"^::(error|warning|notice)( [^:]*)?::")
_HEADING = re.compile(r"^(?:\s*(?:[-*+]|\d+[.)])\s+)*#{1,6}\s.*PWN", re.M)
_LINK = re.compile(r"!?\[[^\]\n]*\]\((?:https?:)?//e\.vil")
_DEFINITION = re.compile(r"^(?:\s*(?:[-*+]|\d+[.)])\s+)*\[[^\]\n]+\]:\s*https?://e\.vil", re.M)
_MENTION = re.compile(r"(?<![\w\u2060])@acme")
_ISSUE = re.compile(r"acme/other#12")
_TABLE = re.compile(r"(?<!\\)\| PWN injected")
_MARKER = re.compile(r"<!--\s*onnx-gate")
_CODE_SPAN = re.compile(r"`[^`\n]+`")


def rendered(out: dict[str, str]) -> list[str]:
    """Every place a payload acts instead of reading as text."""
    found = []
    for name in ("report.md", "summary.md"):
        text = _CODE_SPAN.sub("`…`", out[name])  # a code span shows its text as it is: nothing acts there
        for what, pattern in (
            ("heading", _HEADING), ("link or image", _LINK), ("link definition", _DEFINITION),
            ("mention", _MENTION), ("issue reference", _ISSUE), ("table cell", _TABLE), ("marker", _MARKER),
        ):  # fmt: skip
            if pattern.search(text):
                found.append(f"{name}: {what}")
        if re.search(r"<\s*(script|img)\b", text, re.I):
            found.append(f"{name}: html")
        if any(len(line) > 3 * escape.MESSAGE_MAX + 2000 for line in text.splitlines()):
            found.append(f"{name}: a line past the cap")
    for line in out["stdout"].splitlines():
        if line.startswith("::") and not _OURS.match(line):
            found.append(f"stdout: a workflow command of its own: {line[:80]!r}")
        elif line.startswith("::") and "PWN" in line.split("::")[1]:
            found.append(f"stdout: payload in a command's properties: {line[:80]!r}")
        if len(line) > escape.MESSAGE_MAX + 1000:
            found.append(f"stdout: a line of {len(line)} characters")
    if "set-output" in out["outputs"] or "PWN" in out["outputs"]:
        found.append("step outputs")
    return found
