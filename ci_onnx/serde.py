"""JSON round-trip and JSON Schema for the frozen dataclasses that stages exchange.

The contracts (Target, Manifest, Observation, TargetResult) are plain frozen dataclasses with type
hints. This module turns them into JSON-ready dicts and back, and derives a JSON Schema from the
same hints, so runners in other languages can check what they write and the schema can never
drift from the code (``python -m ci_onnx.serde`` rewrites the files in ``ci_onnx/schemas``).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
import types
import typing
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

SCHEMA_DIR = Path(__file__).parent / "schemas"
_SCHEMA_BASE = "https://onnx-gate.dev/schemas/"


OMIT_DEFAULT = {"omit_default": True}
"""Field metadata: the field is left out of the JSON while it holds its default (readers fill it in)."""


def to_json(obj: Any) -> Any:
    """A JSON-ready value: dataclasses become dicts, enums their values, tuples lists."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {
            f.name: to_json(getattr(obj, f.name))
            for f in dataclasses.fields(obj)
            if not (f.metadata.get("omit_default") and getattr(obj, f.name) == f.default)
        }
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, (list, tuple)):
        return [to_json(v) for v in obj]
    if isinstance(obj, dict):
        return {str(k): to_json(v) for k, v in obj.items()}
    if isinstance(obj, float) and obj != obj:  # NaN is not JSON; the figures that can be NaN say so
        return None
    return obj


def from_json(cls: type[T], data: Any) -> T:
    """Build ``cls`` from what :func:`to_json` produced; unknown keys are an error."""
    return typing.cast(T, _decode(cls, data, cls.__name__))


def dumps(obj: Any) -> str:
    return json.dumps(to_json(obj), indent=2, sort_keys=False, allow_nan=False) + "\n"


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    """The resolved type hints of a dataclass, once per class (resolving them costs ~1 ms each time)."""
    return typing.get_type_hints(cls)


def _decode(tp: Any, data: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is Any:
        return data
    if origin in (typing.Union, types.UnionType):
        if data is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _decode(arg, data, where)
            except (TypeError, ValueError, KeyError) as exc:
                errors.append(str(exc))
        raise TypeError(f"{where}: {data!r} matches none of {tp}: {'; '.join(errors)}")
    if origin is typing.Literal:
        if data not in args:
            raise ValueError(f"{where}: {data!r} is not one of {args}")
        return data
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(data, dict):
            raise TypeError(f"{where}: expected an object, got {type(data).__name__}")
        hints = _hints(tp)
        fields = {f.name: f for f in dataclasses.fields(tp)}
        unknown = set(data) - set(fields)
        if unknown:
            raise KeyError(f"{where}: unknown keys {sorted(unknown)}")
        kwargs = {}
        for name, f in fields.items():
            if name in data:
                kwargs[name] = _decode(hints[name], data[name], f"{where}.{name}")
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise KeyError(f"{where}: missing key {name!r}")
        return tp(**kwargs)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return tp(data)
    if origin is tuple:
        if not isinstance(data, list):
            raise TypeError(f"{where}: expected an array")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_decode(args[0], v, f"{where}[{i}]") for i, v in enumerate(data))
        return tuple(_decode(a, v, f"{where}[{i}]") for i, (a, v) in enumerate(zip(args, data, strict=True)))
    if origin is list:
        return [_decode(args[0], v, f"{where}[{i}]") for i, v in enumerate(data)]
    if origin is dict:
        if not isinstance(data, dict):
            raise TypeError(f"{where}: expected an object")
        return {k: _decode(args[1], v, f"{where}.{k}") for k, v in data.items()}
    if tp is float:
        if data is None:
            return float("nan")
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            raise TypeError(f"{where}: expected a number, got {data!r}")
        return float(data)
    if tp is int and (isinstance(data, bool) or not isinstance(data, int)):
        raise TypeError(f"{where}: expected an integer, got {data!r}")
    if tp in (str, bool) and not isinstance(data, tp):
        raise TypeError(f"{where}: expected {tp.__name__}, got {data!r}")
    return data


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
            hints = _hints(tp)
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
    from ci_onnx.bundle import Manifest
    from ci_onnx.results import Observation, TargetResult
    from ci_onnx.target import Target

    contracts: dict[str, type] = {
        "target.schema.json": Target,
        "manifest.schema.json": Manifest,
        "observation.schema.json": Observation,
        "target-result.schema.json": TargetResult,
    }
    out = {}
    for filename, cls in contracts.items():
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
