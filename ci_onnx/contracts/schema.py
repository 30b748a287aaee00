"""The JSON Schemas of the contracts, derived from the dataclasses' type hints.

Runners in other languages check what they write against them, and they can never drift from the
code: ``python -m ci_onnx.contracts.schema`` rewrites the files in ``ci_onnx/schemas`` (a test fails when they
drift). The registry of contracts lives here, above them, so that serde (which they all use) needs
none of them.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import types
import typing
from pathlib import Path
from typing import Any

from ci_onnx.contracts.bundle import Manifest
from ci_onnx.contracts.results import Observation, TargetResult
from ci_onnx.contracts.serde import field_types
from ci_onnx.contracts.target import Target

SCHEMA_DIR = Path(__file__).parents[1] / "schemas"
_SCHEMA_BASE = "https://onnx-gate.dev/schemas/"
CONTRACTS: dict[str, type] = {
    "target.schema.json": Target,
    "manifest.schema.json": Manifest,
    "observation.schema.json": Observation,
    "target-result.schema.json": TargetResult,
}
"""Every contract's schema file, by the dataclass it describes."""


def _doc(cls: type) -> str:
    doc = (cls.__doc__ or "").strip()
    return "" if doc.startswith(cls.__name__ + "(") else " ".join(doc.split())


def _schema_for(tp: Any, defs: dict[str, Any]) -> dict[str, Any]:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is Any:
        return {}
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [_schema_for(a, defs) for a in args]}
    if tp is type(None):
        return {"type": "null"}
    if origin is typing.Literal:
        return {"enum": list(args)}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        name = tp.__name__
        if name not in defs:
            defs[name] = {}  # placeholder against recursion
            hints = field_types(tp)
            props = {f.name: _schema_for(hints[f.name], defs) for f in dataclasses.fields(tp)}
            required = [
                f.name
                for f in dataclasses.fields(tp)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            ]
            defs[name] = {
                "type": "object",
                **({"description": _doc(tp)} if _doc(tp) else {}),
                "properties": props,
                "required": required,
                "additionalProperties": False,
            }
        return {"$ref": f"#/$defs/{name}"} if defs.get("__root__") != name else defs[name]
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return {"enum": [m.value for m in tp]}
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": _schema_for(args[0], defs)}
        return {
            "type": "array",
            "prefixItems": [_schema_for(a, defs) for a in args],
            "minItems": len(args),
            "maxItems": len(args),
        }
    if origin is list:
        return {"type": "array", "items": _schema_for(args[0], defs)}
    if origin is dict:
        return {"type": "object", "additionalProperties": _schema_for(args[1], defs)}
    if tp is float:
        return {"type": ["number", "null"]}
    simple = {str: "string", int: "integer", bool: "boolean"}
    if tp in simple:
        return {"type": simple[tp]}
    raise TypeError(f"no JSON Schema for {tp!r}")


def contract_schemas() -> dict[str, dict[str, Any]]:
    """Every contract's schema, by file name."""
    out = {}
    for filename, cls in CONTRACTS.items():
        defs: dict[str, Any] = {"__root__": cls.__name__}
        root = _schema_for(cls, defs)
        defs.pop("__root__")
        out[filename] = {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": _SCHEMA_BASE + filename,
            "title": cls.__name__,
            **root,
            "$defs": {k: v for k, v in sorted(defs.items()) if k != cls.__name__},
        }
    return out


def load_schema(filename: str) -> dict[str, Any]:
    return typing.cast(dict[str, Any], json.loads((SCHEMA_DIR / filename).read_text()))


def write_schemas() -> list[Path]:
    written = []
    for filename, schema in contract_schemas().items():
        path = SCHEMA_DIR / filename
        path.write_text(json.dumps(schema, indent=2) + "\n")
        written.append(path)
    return written


if __name__ == "__main__":
    for p in write_schemas():
        print(p)
