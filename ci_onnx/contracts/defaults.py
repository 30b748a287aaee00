"""Defaults declared once: schemas/config.schema.json holds the default of every onnx-gate.yml key.

The settings also live past the config: in VerifyOptions (what a plan carries to each verify job),
in bundle.Tolerance (what a manifest says), in the Python runner's Options and its command line.
Each of those takes its default from here, ci_onnx/config/ fills every key the user left out from the
same schema, and the docs' configuration reference is generated from it
(``python -m ci_onnx.cli.docs_reference --write``). tests/unit/test_defaults.py checks that
they agree.

Only json and pathlib: the runner child imports this beside numpy and onnxruntime.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

CONFIG_SCHEMA = Path(__file__).resolve().parents[1] / "schemas" / "config.schema.json"


@functools.cache
def _schema() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(CONFIG_SCHEMA.read_text())
    return data


def of(key: str) -> Any:
    """The schema's default of the onnx-gate.yml key ``key``, dotted: ``verify.latency_runs``."""
    node = _schema()
    for part in key.split("."):
        node = node["properties"][part]
    return node["default"]
