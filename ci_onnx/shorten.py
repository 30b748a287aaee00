"""One line of at most ``limit`` characters from a message, cut between words, keeping its key part.

Runtime errors put the key line last: "[ONNXRuntimeError] : 1 : FAIL : Load model from /a/long/path
failed:Unsupported model IR version: 10, max supported IR version: 9". Cutting the first N characters
keeps the noise and loses the reason; this keeps the start and the key part, and never cuts a word.
"""

from __future__ import annotations

import re

ELLIPSIS = " … "
_KEY = re.compile(r"(?:failed:|Error:|error:|\n)\s*", re.MULTILINE)


def _cut(text: str, limit: int) -> str:
    """``text`` cut at the last space that fits ``limit`` (with an ellipsis), or whole if it fits."""
    if len(text) <= limit:
        return text
    room = max(1, limit - 1)
    head = text[:room]
    if " " in head.strip():
        head = head[: head.rstrip().rfind(" ")]
    return head.rstrip(" ,;:") + "…"


def fit(text: str, limit: int) -> str:
    """``text`` on one line within ``limit`` characters; its key part (after the last "failed:",
    "Error:" or line break) kept whole where it fits."""
    one = " ".join(text.split())
    if len(one) <= limit:
        return one
    stripped = text.strip()
    parts = _KEY.split(stripped)
    key = " ".join(parts[-1].split()) if len(parts) > 1 else ""
    if not key or len(key) + len(ELLIPSIS) + 10 > limit:
        return _cut(one, limit)
    start = " ".join(stripped[: len(stripped) - len(parts[-1])].split())  # the same string split
    return _cut(start, limit - len(key) - len(ELLIPSIS)).removesuffix("…") + ELLIPSIS.rstrip() + " " + key
