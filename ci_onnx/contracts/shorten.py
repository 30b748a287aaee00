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


_SOURCE = re.compile(r"(?:[^\s:]*/)?[\w.-]+\.(?:cc|cpp|cxx|h|hpp):\d+\s+")
_NAME = re.compile(r"[\w:<>,*&~ ]{1,200}")
"""A return type and a qualified name before a signature's parameters (``void onnxruntime::f``)."""
_STATUS = re.compile(r"^\[ONNXRuntimeError\] : \d+ : \w+ : ")


def runtime_words(message: str) -> str:
    """onnxruntime's message without its C++ part: the status prefix (``[ONNXRuntimeError] : 1 :
    FAIL :``) and, after each source location (``…/core/graph/model.cc:180``), the signature of the
    function that raised (``onnxruntime::Model::Model(onnx::ModelProto&&, …)``): what remains is
    the sentence a person reads ("Unsupported model IR version: 11, max supported IR version: 10")."""
    text = _STATUS.sub("", " ".join(message.split()))
    out, pos = [], 0
    for m in _SOURCE.finditer(text):
        if m.start() < pos:
            continue
        out.append(text[pos : m.start()].rstrip() + " ")
        pos = _after_signature(text, m.end())
    out.append(text[pos:])
    return "".join(out).strip()


def _after_signature(text: str, start: int) -> int:
    """Where the words after a C++ signature that starts at ``start`` begin; ``start`` if there is
    none (a qualified name, its parameters in parentheses, maybe ``const``)."""
    open_at = text.find("(", start)
    head = text[start:open_at] if open_at > start else ""
    if "::" not in head or not _NAME.fullmatch(head):
        return start
    depth = 0
    for i in range(open_at, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            rest = text[i + 1 :].lstrip()
            rest = rest.removeprefix("const ").lstrip()
            return len(text) - len(rest)
    return start
