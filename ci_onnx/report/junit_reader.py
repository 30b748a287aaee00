"""A lenient reader for JUnit XML written by other tools (pytest, jest, mocha, bazel, …).

JUnit has no single schema in the wild: the root may be ``<testsuites>`` or ``<testsuite>``, suites
nest, attributes are missing, a case may carry several of ``<skipped>``, ``<failure>``, ``<error>``.
A case's result is the most severe element it holds (error > failure > skipped). A file that is not
JUnit, or not XML, becomes a parse error the report shows; it never raises.
"""

from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Sequence
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

    def _n(self, result: str) -> int:
        return sum(1 for c in self.cases if c.result == result)

    @property
    def tests(self) -> int:
        return len(self.cases)

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


def _suites(el: ET.Element) -> Iterator[ET.Element]:
    """Every <testsuite>, innermost first (a suite's own cases are its direct <testcase> children)."""
    for child in el:
        if child.tag == "testsuite":
            yield from _suites(child)
            yield child


def read_file(path: Path) -> JUnitSummary:
    name = path.name
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError) as exc:
        return JUnitSummary(files=1, parse_errors=(f"{name}: not readable as XML ({exc})",))
    if root.tag == "testsuite":
        suites = [*_suites(root), root]
    elif root.tag == "testsuites":
        suites = list(_suites(root))
    else:
        return JUnitSummary(files=1, parse_errors=(f"{name}: not JUnit XML (root element <{root.tag}>)",))
    cases = [_case(c, name, s.get("name") or "") for s in suites for c in s if c.tag == "testcase"]
    return JUnitSummary(files=1, suites=len(suites), cases=tuple(cases[:MAX_CASES_KEPT]))


def read(paths: Sequence[Path]) -> JUnitSummary:
    """Read JUnit files and directories (``*.xml`` found recursively) into one summary."""
    files: list[Path] = []
    for p in paths:
        files.extend(sorted(p.rglob("*.xml")) if p.is_dir() else [p])
    total = JUnitSummary()
    for f in files:
        one = read_file(f)
        total = JUnitSummary(
            files=total.files + one.files,
            suites=total.suites + one.suites,
            cases=(total.cases + one.cases)[:MAX_CASES_KEPT],
            parse_errors=total.parse_errors + one.parse_errors,
        )
    return total
