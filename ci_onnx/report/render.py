"""Lay a view out with the jinja2 templates in templates/ (found by ci_onnx._data), within a size limit."""

from __future__ import annotations

import functools
from typing import Any

import jinja2

from ci_onnx import _data
from ci_onnx.contracts import escape
from ci_onnx.report.limits import UNLIMITED, Limit, truncate

MARKER = "<!-- onnx-gate:report -->"
"""The hidden line that identifies the sticky PR comment."""


def marker(key: str = "") -> str:
    """The marker of one report; a key tells apart the reports of several configs on one PR."""
    return f"<!-- onnx-gate:report:{key} -->" if key else MARKER


FOLD_ROWS = 24
"""Tables longer than this fold their passing rows into <details>."""
JUNIT_LIMIT = 20


def cell(value: Any) -> str:
    """Text safe inside a Markdown table cell or a <summary>: ci_onnx.contracts.escape.markdown, the one
    path."""
    return escape.markdown(value)


@functools.cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(_data.templates_dir()),
        autoescape=False,  # Markdown, not HTML: values pass through the `cell` filter instead
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["cell"] = cell
    env.filters["code"] = escape.code
    env.filters["html"] = escape.html
    return env


def render(view: Any, *, template: str = "report.md.j2", fold: int = 0, marker: str = "") -> str:
    text = (
        environment()
        .get_template(template)
        .render(view=view, fold=fold, marker=marker, junit_limit=JUNIT_LIMIT)
    )
    return _tidy(text)


def _tidy(text: str) -> str:
    """At most one blank line in a row, one newline at the end."""
    out: list[str] = []
    for line in text.rstrip().split("\n"):
        if line.strip() == "" and out and out[-1].strip() == "":
            continue
        out.append(line.rstrip() if not line.strip() else line)
    return "\n".join(out) + "\n"


def pointer(view: Any, limit: Limit) -> str:
    where = f"the artifact of [this run]({view.run_url})" if view.run_url else "the report directory"
    return (
        f"> ✂️ Cut to fit GitHub's limit on a {limit.name} ({limit.size:,} {limit.unit.value}). "
        f"The full report is `{view.report_file}`, in {where}."
    )


def first_fold(view: Any) -> int:
    """Long tables read better with passing rows folded into <details>, limit or not."""
    longest = max(len(view.parity), len(view.fallback), len(view.latency.rows))
    return 1 if longest > FOLD_ROWS else 0


def render_within(
    view: Any, limit: Limit = UNLIMITED, *, template: str = "report.md.j2", marker: str = ""
) -> str:
    """The fullest rendering that fits: leave passing rows out first, then truncate with a pointer."""
    text = ""
    for fold in (first_fold(view), 2, 3):
        text = render(view, template=template, fold=fold, marker=marker)
        if limit.fits(text):
            return text
    return truncate(text, limit, pointer(view, limit))
