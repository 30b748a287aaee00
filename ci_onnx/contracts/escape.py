"""The one escaping path for text onnx-gate did not write itself, wherever it is shown.

A result, a plan, a JUnit file, a device or a fork's artifacts can say anything; the report shows it
in the trusted comment, the job summary, the check run, workflow commands and the terminal. Each
function here makes the text one line, caps it at :data:`MESSAGE_MAX` characters, and takes away
what its context would act on:

- :func:`markdown`: Markdown text, a table cell, or the text of a ``<summary>`` (no HTML tag, no
  pipe, no link or image, no @mention or #reference, no heading at the start);
- :func:`code`: the inside of a Markdown code span (no backtick, no pipe);
- :func:`html`: the inside of an HTML element or attribute;
- :func:`workflow_data` and :func:`workflow_property`: a workflow command's message and properties;
- :func:`line`: the terminal (one line, capped).
"""

from __future__ import annotations

import html as _html
import re
from typing import Any

MESSAGE_MAX = 2000
"""The most characters of one message shown anywhere (a 50 MB summary is cut, saying so)."""
_ANGLES = (("<=", "≤"), (">=", "≥"), ("<", "‹"), (">", "›"))
_JOINER = "\u2060"
"""WORD JOINER: invisible, and not part of a user name or an issue number, so ``@team`` and ``#12``
read the same but mention and link nothing."""


def cap(text: str, limit: int = MESSAGE_MAX) -> str:
    """``text`` cut to ``limit`` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    note = f"… ({len(text) - limit:,} more characters)"
    return text[: max(0, limit - len(note))] + note


def line(value: Any, limit: int = MESSAGE_MAX) -> str:
    """One line: every run of whitespace (line breaks included) one space, capped."""
    return cap(" ".join(str(value).split()), limit)


def markdown(value: Any, limit: int = MESSAGE_MAX) -> str:
    """Text safe as Markdown anywhere a line holds it: in a table cell, a list item, a ``<summary>``.

    Angle brackets become look-alikes (``<=`` → ≤, ``<`` → ‹) rather than entities, and brackets stay
    unless they would make a link, so report.md reads the same on a terminal as the comment GitHub
    renders (``parity[logits]`` stays as it is)."""
    text = line(value, limit)
    for raw, shown in _ANGLES:
        text = text.replace(raw, shown)
    text = _PIPE.sub(lambda m: m.group(1) * 2 + "\\|", text)  # a backslash before it stays a backslash
    text = text.replace("](", f"]{_JOINER}(").replace("][", f"]{_JOINER}[")  # no link, image or reference
    text = _REFERENCE.sub(lambda m: m.group(0) + _JOINER, text)
    start = _BLOCK_START.match(text)
    if start is None:
        return text
    at = len(start.group(0)) - 2 if start.group(0)[0].isdigit() else 0  # 1. → 1\. ; # → \#
    return text[:at] + "\\" + text[at:]


_PIPE = re.compile(r"(\\*)\|")
_REFERENCE = re.compile(r"[@#](?=[A-Za-z0-9_-])")
"""An @mention or a #123 reference: a word joiner after the sign makes it plain text."""
_BLOCK_START = re.compile(r"#|\[|[-+*] |\d+[.)] ")
"""What would make a heading, a link definition or a list of the start of a list item's text."""


def code(value: Any, limit: int = MESSAGE_MAX) -> str:
    """Text for the inside of a code span in a table: no backtick to close it, no pipe to split the row."""
    return line(value, limit).replace("`", "ˋ").replace("|", "\\|") or " "


def html(value: Any, limit: int = MESSAGE_MAX) -> str:
    """Text for the inside of an HTML element or a quoted attribute."""
    return _html.escape(line(value, limit), quote=True)


def workflow_data(value: Any, limit: int = MESSAGE_MAX) -> str:
    """A workflow command's message: it stays one command (``%``, CR and LF escaped), capped."""
    return cap(str(value), limit).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def workflow_property(value: Any, limit: int = 200) -> str:
    """A workflow command's property value (``file=``, ``title=``): also no ``:`` or ``,``."""
    return workflow_data(value, limit).replace(":", "%3A").replace(",", "%2C")
