"""GitHub's size limits, and fitting a rendered body within one.

Past a limit the report first folds passing rows (into <details>, then out), and only then truncates,
at a line, closing what it cut open, with a pointer to the full report file, which is always written.
"""

from __future__ import annotations

import dataclasses
import enum


class Unit(enum.Enum):
    CHARS = "characters"
    BYTES = "bytes"


@dataclasses.dataclass(frozen=True)
class Limit:
    name: str
    size: int
    unit: Unit

    def measure(self, text: str) -> int:
        return len(text) if self.unit is Unit.CHARS else len(text.encode("utf-8"))

    def fits(self, text: str) -> bool:
        return self.measure(text) <= self.size


COMMENT = Limit("PR comment body", 65_536, Unit.CHARS)
CHECK_SUMMARY = Limit("check-run summary", 65_535, Unit.CHARS)
JOB_SUMMARY = Limit("job summary", 1024 * 1024, Unit.BYTES)
UNLIMITED = Limit("report file", 1 << 62, Unit.CHARS)


def truncate(text: str, limit: Limit, pointer: str) -> str:
    """``text`` cut at a line so that it, the closing tags it needs and ``pointer`` fit ``limit``."""
    if limit.fits(text):
        return text
    budget = limit.size - limit.measure(pointer) - 64  # room for closing a fence and <details> tags
    lines = text.split("\n")
    kept: list[str] = []
    used = 0
    for line in lines:
        cost = limit.measure(line) + 1
        if used + cost > budget:
            break
        kept.append(line)
        used += cost
    body = "\n".join(kept)
    closing = []
    if sum(1 for line in kept if line.startswith("```")) % 2:
        closing.append("```")
    open_details = body.count("<details>") - body.count("</details>")
    closing.extend(["</details>"] * open_details)
    tail = "\n" + "\n".join(closing) if closing else ""
    out = f"{body}{tail}\n\n{pointer}\n"
    while not limit.fits(out) and kept:  # many unclosed tags: drop lines until it fits
        kept.pop()
        out = "\n".join(kept) + f"\n\n{pointer}\n"
    return out
