"""JSON round-trip for the frozen dataclasses that stages exchange.

The contracts (Target, Manifest, Observation, TargetResult) are plain frozen dataclasses with type
hints. This module turns them into JSON-ready dicts and back from those hints alone; it knows no
contract by name (ci_onnx.contracts.schema derives their JSON Schemas from the same hints).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
import types
import typing
from typing import Any, TypeVar

T = TypeVar("T")


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
def field_types(cls: type) -> dict[str, Any]:
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
        hints = field_types(tp)
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
