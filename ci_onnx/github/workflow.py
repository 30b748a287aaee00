"""Workflow commands, the job summary and step outputs: what a job tells GitHub Actions on its own.

Reference: docs.github.com, "Workflow commands for GitHub Actions".
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from ci_onnx.contracts import escape

MAX_JOB_SUMMARY_BYTES = 1024 * 1024


def annotation(
    level: Literal["error", "warning", "notice"],
    message: str,
    *,
    title: str = "",
    file: str = "",
    line: int | None = None,
) -> str:
    """``::error file=…,line=…,title=…::message``, escaped so that any text stays one command, and
    capped (ci_onnx.contracts.escape: a 50 MB summary is cut, saying so)."""
    props = []
    if file:
        props.append(f"file={escape.workflow_property(file)}")
    if line is not None:
        props.append(f"line={line}")
    if title:
        props.append(f"title={escape.workflow_property(title)}")
    head = f"::{level} {','.join(props)}" if props else f"::{level}"
    return f"{head}::{escape.workflow_data(message)}"


def group(title: str) -> str:
    return f"::group::{escape.workflow_data(title)}"


def endgroup() -> str:
    return "::endgroup::"


def append_summary(path: Path, markdown: str) -> None:
    """Append to $GITHUB_STEP_SUMMARY; the caller keeps ``markdown`` within the 1 MiB limit."""
    size = len(markdown.encode("utf-8"))
    if size > MAX_JOB_SUMMARY_BYTES:
        raise ValueError(f"a job summary of {size} bytes is over GitHub's limit of {MAX_JOB_SUMMARY_BYTES}")
    with path.open("a", encoding="utf-8") as fh:
        fh.write(markdown if markdown.endswith("\n") else markdown + "\n")


def set_outputs(path: Path, outputs: Mapping[str, str]) -> None:
    """Append step outputs to $GITHUB_OUTPUT in the heredoc form, safe for any value."""
    with path.open("a", encoding="utf-8") as fh:
        for key, value in outputs.items():
            delimiter = f"ghadelim_{uuid.uuid4().hex}"
            fh.write(f"{key}<<{delimiter}\n{value}\n{delimiter}\n")
