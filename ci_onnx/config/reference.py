"""Render the configuration reference (the docs' reference/configuration.md table) from the config
schema.

The schema is the one place that declares keys and defaults; ``python -m ci_onnx.cli.docs_reference
--write`` splices the table into the page, and a test keeps the page in step with it.
"""

from __future__ import annotations

import json
from typing import Any

from ci_onnx.config import schema

BEGIN = "<!-- config-reference:begin (python -m ci_onnx.cli.docs_reference --write) -->"
END = "<!-- config-reference:end -->"


def _ref(ref: str) -> dict[str, Any]:
    """The schema node a local ``$ref`` (``#/$defs/model_block``) points at."""
    node: Any = schema()
    for part in ref.removeprefix("#/").split("/"):
        node = node[part]
    return node


def _key_of(ref: str) -> str:
    """``#/properties/model/properties/factory`` as the key it names: ``model.factory``."""
    return ".".join(p for p in ref.removeprefix("#/").split("/") if p != "properties")


def rows(node: dict[str, Any], prefix: str = "") -> list[tuple[str, str, str, str]]:
    out = []
    for key, sub in node.get("properties", {}).items():
        path = f"{prefix}{key}"
        if set(sub) == {"$ref"}:  # a model's block: the key of the top it takes its form from
            named = _key_of(sub["$ref"])
            over = "" if "." in named else "this model's, merged over the top's key by key"
            out.append((path, f"as `{named}`", "", over))
            continue
        items = sub.get("items")  # models: a list of blocks, or a mapping of them
        if sub.get("type") == ["array", "object"] and isinstance(items, dict) and "$ref" in items:
            out.append((path, "list \\| mapping of object", "", sub.get("description", "")))
            out.extend(rows(_ref(_ref(items["$ref"])["$ref"]), path + "[]."))
            continue
        kind = _kind(sub)
        default = json.dumps(sub["default"]) if "default" in sub and sub.get("type") != "object" else ""
        desc = sub.get("description", "")
        out.append((path, kind, default, desc))
        if sub.get("type") == "object" and "properties" in sub:
            out.extend(rows(sub, path + "."))
        items = sub.get("items")
        if sub.get("type") == "array" and isinstance(items, dict) and "properties" in items:
            out.extend(rows(items, path + "[]."))
        extra = sub.get("additionalProperties")
        if isinstance(extra, dict) and "properties" in extra:
            out.extend(rows(extra, path + ".<name>."))
    return out


def _kind(sub: dict[str, Any]) -> str:
    if "enum" in sub:
        return " \\| ".join(str(v) for v in sub["enum"])
    if "const" in sub:
        return str(sub["const"])
    t = sub.get("type", "")
    if t == "array":
        items = sub.get("items", {})
        inner = " \\| ".join(str(v) for v in items["enum"]) if "enum" in items else items.get("type", "")
        inner = " \\| ".join(inner) if isinstance(inner, list) else inner
        return f"list of {inner or 'object'}"
    return " \\| ".join(t) if isinstance(t, list) else str(t)


def render() -> str:
    lines = [BEGIN, "", "| key | type | default | meaning |", "|---|---|---|---|"]
    for path, kind, default, desc in rows(schema()):
        lines.append(f"| `{path}` | {kind} | {f'`{default}`' if default else ''} | {desc} |")
    lines += ["", END]
    return "\n".join(lines)


def replace_block(text: str, begin: str, end: str, block: str) -> str:
    """``text`` with everything from ``begin`` to ``end`` (both markers included) replaced by
    ``block``, which holds both markers; the docs' generated tables are spliced in this way."""
    head, _, rest = text.partition(begin)
    _, _, tail = rest.partition(end)
    return head + block + tail
