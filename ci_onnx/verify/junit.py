"""A TargetResult as JUnit XML: one <testsuite> per target, one <testcase> per check.

Valid against the Jenkins xunit junit-10 schema (what CI dashboards read): figures go in the suite's
<properties> and in each testcase's <system-out>, since junit-10 takes no properties in a testcase.
An expected skip is a <skipped>, with its reason.
"""

from __future__ import annotations

import json
import re
import socket
import xml.etree.ElementTree as ET
from pathlib import Path

from ci_onnx.contracts.results import TargetResult
from ci_onnx.contracts.target import Status

_CLASS = "onnx-gate"
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def clean(text: str) -> str:
    """Text XML 1.0 can hold: ANSI colour codes and control characters removed."""
    return _NOT_XML.sub("", _ANSI.sub("", text))


def _time(seconds: float) -> str:
    return f"{max(seconds, 0.0):.3f}"


def to_element(result: TargetResult) -> ET.Element:
    checks = result.checks
    failures = sum(1 for c in checks if c.status == Status.FAILED)
    errors = sum(1 for c in checks if c.status == Status.ERROR)
    skipped = sum(1 for c in checks if c.status in (Status.SKIPPED, Status.EXPECTED))
    suite = ET.Element(
        "testsuite",
        {
            "name": result.target.id,
            "tests": str(len(checks)),
            "failures": str(failures),
            "errors": str(errors),
            "skipped": str(skipped),
            "time": _time(result.duration_s),
            "hostname": socket.gethostname(),
            **({"timestamp": result.started_at} if result.started_at else {}),
        },
    )
    props = ET.SubElement(suite, "properties")
    for name, value in _properties(result).items():
        ET.SubElement(props, "property", {"name": name, "value": clean(value)})
    for check in checks:
        case = ET.SubElement(
            suite,
            "testcase",
            {
                "name": check.name,
                "classname": f"{_CLASS}.{result.target.id}",
                "time": _time(check.duration_s),
            },
        )
        message = clean(check.message)
        if check.status == Status.FAILED:
            ET.SubElement(case, "failure", {"type": check.name, "message": message}).text = message
        elif check.status == Status.ERROR:
            ET.SubElement(case, "error", {"type": check.name, "message": message}).text = message
        elif check.status in (Status.SKIPPED, Status.EXPECTED):
            prefix = "expected: " if check.status == Status.EXPECTED else ""
            ET.SubElement(case, "skipped", {"message": prefix + message})
        out = [message] if check.status == Status.PASSED and message else []
        if check.figures:
            out.append(clean(json.dumps(check.figures, sort_keys=True, default=str)))
        if out:
            ET.SubElement(case, "system-out").text = "\n".join(out)
    return suite


def _properties(result: TargetResult) -> dict[str, str]:
    t = result.target
    props = {
        "status": result.status.value,
        "runtime": t.runtime,
        "provider": t.provider,
        "opset": str(t.opset),
        "exporter": t.exporter,
        "precision": t.precision,
    }
    if result.summary:
        props["summary"] = result.summary
    obs = result.observed
    if obs.environment:
        props["runtime_version"] = obs.environment.runtime_version
        props["providers_registered"] = ",".join(obs.environment.providers_registered)
    if obs.session_create_ms is not None:
        props["session_create_ms"] = f"{obs.session_create_ms:.1f}"
    if obs.peak_rss_mb is not None:
        props["peak_rss_mb"] = f"{obs.peak_rss_mb:.1f}"
    for s in obs.latency:
        props[f"latency_b{s.batch_size}_p50_ms"] = f"{s.p50_ms:.4g}"
        props[f"latency_b{s.batch_size}_p99_ms"] = f"{s.p99_ms:.4g}"
    if obs.placement:
        props["cpu_time_share"] = f"{obs.placement.cpu_time_share:.4f}"
    if result.reproduce:
        props["reproduce"] = result.reproduce
    return props


def dumps(result: TargetResult) -> str:
    root = ET.Element("testsuites", {"name": "onnx-gate", "time": _time(result.duration_s)})
    suite = to_element(result)
    for key in ("tests", "failures", "errors"):
        root.set(key, suite.get(key, "0"))
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write(out_dir: Path, result: TargetResult) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{result.target.id}.xml"
    path.write_text(dumps(result), encoding="utf-8", errors="replace")  # a lone surrogate: "?"
    return path
