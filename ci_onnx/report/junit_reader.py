"""A lenient reader for JUnit XML written by other tools (pytest, jest, mocha, bazel, …).

JUnit has no single schema in the wild: the root may be ``<testsuites>`` or ``<testsuite>``, suites
nest, attributes are missing, a case may carry several of ``<skipped>``, ``<failure>``, ``<error>``.
A case's result is the most severe element it holds (error > failure > skipped). A file that is not
JUnit, or not XML (an unknown encoding, thousands of nested suites, anything), becomes a parse error
the report shows; it never raises. Cases past ``MAX_CASES_KEPT`` are not kept but still counted.
"""

from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

SEVERITY = ("error", "failure", "skipped")
MAX_CASES_KEPT = 10_000
"""Cases beyond this are counted but not kept, so a huge file cannot exhaust memory."""


@dataclasses.dataclass(frozen=True)
class JUnitCase:
    file: str
    suite: str
    class_name: str
    name: str
    result: str
    """``success``, ``skipped``, ``failure`` or ``error``."""
    message: str | None = None
    content: str | None = None
    time: float | None = None

    @property
    def label(self) -> str:
        return f"{self.class_name} › {self.name}" if self.class_name else self.name


@dataclasses.dataclass(frozen=True)
class JUnitSummary:
    files: int = 0
    suites: int = 0
    cases: tuple[JUnitCase, ...] = ()
    parse_errors: tuple[str, ...] = ()
    dropped: dict[str, int] = dataclasses.field(default_factory=dict)
    """Cases counted but not kept (beyond ``MAX_CASES_KEPT``), by result."""

    def _n(self, result: str) -> int:
        return sum(1 for c in self.cases if c.result == result) + self.dropped.get(result, 0)

    @property
    def tests(self) -> int:
        return len(self.cases) + sum(self.dropped.values())

    @property
    def passed(self) -> int:
        return self._n("success")

    @property
    def failed(self) -> int:
        return self._n("failure")

    @property
    def errors(self) -> int:
        return self._n("error") + len(self.parse_errors)

    @property
    def skipped(self) -> int:
        return self._n("skipped")

    @property
    def failing(self) -> tuple[JUnitCase, ...]:
        return tuple(c for c in self.cases if c.result in ("failure", "error"))


def _float(text: str | None) -> float | None:
    try:
        return float(text) if text not in (None, "") else None
    except ValueError:
        return None


def _case(el: ET.Element, file: str, suite: str) -> JUnitCase:
    result, message, content = "success", None, None
    for kind in SEVERITY:
        found = el.find(kind)
        if found is not None:
            result = kind
            message = found.get("message")
            content = (found.text or "").strip() or None
            break
    return JUnitCase(
        file=file,
        suite=suite,
        class_name=el.get("classname") or el.get("class") or "",
        name=el.get("name") or "",
        result=result,
        message=message,
        content=content,
        time=_float(el.get("time")),
    )


def _suites(root: ET.Element) -> list[ET.Element]:
    """Every <testsuite> below ``root``, innermost first (a suite's own cases are its direct <testcase>
    children). Iterative: a file may nest suites thousands deep."""
    out: list[ET.Element] = []
    stack: list[tuple[ET.Element, bool]] = [(c, False) for c in reversed(list(root)) if c.tag == "testsuite"]
    while stack:
        el, children_done = stack.pop()
        if children_done:
            out.append(el)
            continue
        stack.append((el, True))
        stack.extend((c, False) for c in reversed(list(el)) if c.tag == "testsuite")
    return out


def _keep(
    cases: Sequence[JUnitCase], dropped: dict[str, int]
) -> tuple[tuple[JUnitCase, ...], dict[str, int]]:
    counts = dict(dropped)
    for c in cases[MAX_CASES_KEPT:]:
        counts[c.result] = counts.get(c.result, 0) + 1
    return tuple(cases[:MAX_CASES_KEPT]), counts


def read_file(path: Path) -> JUnitSummary:
    """One file's summary; whatever is wrong with the file is a parse error, never an exception."""
    try:
        return _read_file(path)
    except Exception as exc:  # documented never to raise: a file from another tool is data
        text = " ".join(str(exc).split())[:200] or type(exc).__name__
        return JUnitSummary(files=1, parse_errors=(f"{path.name}: not readable as JUnit XML ({text})",))


def _read_file(path: Path) -> JUnitSummary:
    name = path.name
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError, LookupError, ValueError) as exc:
        text = " ".join(str(exc).split())[:200] or type(exc).__name__
        return JUnitSummary(files=1, parse_errors=(f"{name}: not readable as XML ({text})",))
    if root.tag == "testsuite":
        suites = [*_suites(root), root]
    elif root.tag == "testsuites":
        suites = _suites(root)
    else:
        tag = str(root.tag)[:60]
        return JUnitSummary(files=1, parse_errors=(f"{name}: not JUnit XML (root element <{tag}>)",))
    cases = [_case(c, name, s.get("name") or "") for s in suites for c in s if c.tag == "testcase"]
    kept, dropped = _keep(cases, {})
    return JUnitSummary(files=1, suites=len(suites), cases=kept, dropped=dropped)


def read(paths: Sequence[Path]) -> JUnitSummary:
    """Read JUnit files and directories (``*.xml`` found recursively) into one summary."""
    files: list[Path] = []
    errors: list[str] = []
    for p in paths:
        try:
            if p.is_dir():
                root = p.resolve()
                for f in sorted(p.rglob("*.xml")):
                    if f.resolve().is_relative_to(root):
                        files.append(f)
                    else:
                        errors.append(f"{f}: a link that leads outside {p}; not read")
            else:
                files.append(p)
        except (OSError, RuntimeError) as exc:
            errors.append(f"{p}: cannot be listed ({getattr(exc, 'strerror', None) or exc})")
    total = JUnitSummary(parse_errors=tuple(errors))
    for f in files:
        one = read_file(f)
        merged = {k: total.dropped.get(k, 0) + one.dropped.get(k, 0) for k in {*total.dropped, *one.dropped}}
        cases, dropped = _keep([*total.cases, *one.cases], merged)
        total = JUnitSummary(
            files=total.files + one.files,
            suites=total.suites + one.suites,
            cases=cases,
            dropped=dropped,
            parse_errors=total.parse_errors + one.parse_errors,
        )
    return total
