"""The vendored GitHub OpenAPI operations: matching requests to them, validating, and shaping answers."""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from pathlib import Path
from typing import Any

import jsonschema

SUBSET = Path(__file__).parent.parent / "data" / "github-openapi-subset.json"


def to_json_schema(node: Any) -> Any:
    """OpenAPI 3.0 schema → JSON Schema: ``nullable: true`` becomes a type that admits null."""
    if isinstance(node, list):
        return [to_json_schema(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: to_json_schema(v) for k, v in node.items() if k not in ("nullable", "discriminator")}
    if node.get("nullable"):
        if "type" in out:
            types = out["type"] if isinstance(out["type"], list) else [out["type"]]
            out["type"] = [*types, "null"]
            if "enum" in out:
                out["enum"] = [*out["enum"], None]
        else:
            out = {"anyOf": [out, {"type": "null"}]}
    return out


@dataclasses.dataclass(frozen=True)
class Operation:
    id: str
    method: str
    path: str
    pattern: re.Pattern[str]
    query: dict[str, dict[str, Any]]
    body: dict[str, Any] | None
    body_required: bool
    responses: dict[str, Any]

    def check_request(self, query: dict[str, str], body: Any) -> list[str]:
        errors = []
        for name, value in query.items():
            param = self.query.get(name)
            if param is None:
                errors.append(f"unknown query parameter {name!r}")
            elif param.get("type") == "integer" and not value.isdigit():
                errors.append(f"query parameter {name}={value!r} is not an integer")
        if self.body is None:
            if body is not None:
                errors.append("this operation takes no request body")
        elif body is None:
            if self.body_required:
                errors.append("the request body is required")
        else:
            errors.extend(_errors(self.body, body))
        return errors

    def check_response(self, status: int, data: Any) -> list[str]:
        schema = self.responses.get(str(status))
        if schema is None:
            return [] if str(status) in self.responses else [f"status {status} is not a documented success"]
        return _errors(schema, data)


def _errors(schema: dict[str, Any], data: Any) -> list[str]:
    validator = jsonschema.Draft202012Validator(schema)
    return [
        f"{'/'.join(map(str, e.absolute_path)) or '(body)'}: {e.message[:300]}"
        for e in validator.iter_errors(data)
    ]


@functools.cache
def load() -> tuple[str, tuple[Operation, ...]]:
    data = json.loads(SUBSET.read_text())
    ops = []
    for op_id, op in data["operations"].items():
        # A git ref ({ref}: heads/main, tags/v1) keeps its slashes in the path; every other one is a segment.
        regex = re.sub(r"\\{ref\\}", ".+", re.escape(op["path"]))
        regex = re.sub(r"\\{[a-z_]+\\}", "[^/]+", regex)
        query = {p["name"]: p.get("schema", {}) for p in op["parameters"] if p.get("in") == "query"}
        ops.append(
            Operation(
                id=op_id,
                method=op["method"],
                path=op["path"],
                pattern=re.compile(f"^{regex}$"),
                query=query,
                body=to_json_schema(op["requestBody"]) if op["requestBody"] else None,
                body_required=op["requestBodyRequired"],
                responses={k: to_json_schema(v) for k, v in op["responses"].items()},
            )
        )
    return data["version"], tuple(ops)


def match(method: str, path: str) -> Operation | None:
    return next((op for op in load()[1] if op.method == method and op.pattern.match(path)), None)


def example(schema: Any, overrides: dict[str, Any] | None = None) -> Any:
    """A value that satisfies ``schema`` (required fields filled in), with ``overrides`` on top."""
    if not isinstance(schema, dict):
        return None
    for key in ("oneOf", "anyOf", "allOf"):
        if key in schema:
            return example(schema[key][0], overrides)
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    if "enum" in schema:
        return schema["enum"][0]
    if "object" in kinds or "properties" in schema:
        props = schema.get("properties", {})
        out = {name: example(props.get(name, {})) for name in schema.get("required", [])}
        for key, value in (overrides or {}).items():
            out[key] = value
        return out
    if "null" in kinds and len(kinds) > 1:
        return None
    if "array" in kinds:
        return []
    if "integer" in kinds or "number" in kinds:
        return 1
    if "boolean" in kinds:
        return False
    if "string" in kinds:
        fmt = schema.get("format")
        if fmt == "date-time":
            return "2026-11-29T21:00:00Z"
        if fmt == "uri":
            return "https://github.invalid/x"
        return "x"
    return None
