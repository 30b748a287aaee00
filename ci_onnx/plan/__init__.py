"""Expand the declared matrix into frozen Targets, and write it for people and for GitHub.

runners × runtimes × providers × opsets × exporters × precisions × session-options presets, plus
``include``, minus ``exclude`` (``expansion``); a cell that cannot work is kept, as an expected skip
with its reason: it is never dropped silently and never red. ``document``: the plan as plan.json;
``selection``: targets by id or glob; ``output``: the table and GitHub's step outputs; ``cijobs``:
the CI's verify jobs.
"""

from __future__ import annotations

from ci_onnx.plan.document import SCHEMA_VERSION, Plan, PlannedModel, read_plan, to_json
from ci_onnx.plan.expansion import (
    ModelFile,
    expand,
    model_file,
    onnx_opset,
    opsets_of,
    sort_key,
    with_skip_reason,
)
from ci_onnx.plan.output import render_table, write_github_output
from ci_onnx.plan.selection import matches, select

__all__ = [
    "SCHEMA_VERSION",
    "ModelFile",
    "Plan",
    "PlannedModel",
    "expand",
    "matches",
    "model_file",
    "onnx_opset",
    "opsets_of",
    "read_plan",
    "render_table",
    "select",
    "sort_key",
    "to_json",
    "with_skip_reason",
    "write_github_output",
]
