"""Reading onnx-gate.yml: the YAML as plain values and as ruamel's document (for lines), validated
against the config schema, each problem one line naming the file, the line and the key:
``onnx-gate.yml:12: export.opset: unknown key; did you mean 'opsets'?``"""

from __future__ import annotations

import contextlib
import difflib
import functools
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ci_onnx.config import guard, hints
from ci_onnx.config.model import Config
from ci_onnx.contracts.errors import ConfigError
from ci_onnx.contracts.schema import load_schema

CONFIG_SCHEMA = "config.schema.json"


@functools.cache
def schema() -> dict[str, Any]:
    return load_schema(CONFIG_SCHEMA)


def key_location(cfg: Config, *keys: str) -> str:
    """``path:line: a.b`` for a key of ``cfg``'s file, for a problem found after it was read (a
    factory that is not there); the path alone where the file cannot be read again."""
    from ruamel.yaml import YAML

    path = cfg.model_file or cfg.path
    real = [*cfg.model_keys, *keys[1:]] if keys[:1] == ("model",) else list(keys)
    try:
        doc = YAML(typ="rt").load(io.StringIO(guard.read_text(path).removeprefix("\ufeff")))
    except Exception:  # changed or gone since it was read: the key without its line
        return f"{path}: {'.'.join(real)}"
    return f"{path}:{guard.line_of(doc, real)}: {'.'.join(real)}"


def read(text: str, path: Path) -> tuple[dict[str, Any], Any]:
    """The file as plain values and as ruamel's document (for lines), validated against the schema."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    yaml = YAML(typ="rt")
    yaml.Constructor = _constructor()
    guard.check_flow_depth(text, path)
    try:
        doc = yaml.load(io.StringIO(text.removeprefix("\ufeff")))
    except MarkedYAMLError as exc:
        mark = exc.problem_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{path}{line}: not valid YAML: {guard.one_line(exc.problem)}") from None
    except (YAMLError, ValueError, TypeError, RecursionError, OverflowError, AttributeError) as exc:
        # ReaderError (control characters), complex keys, deep nesting: still one line
        raise ConfigError(
            f"{path}: not valid YAML: {guard.one_line(str(exc) or type(exc).__name__)}"
        ) from None
    if doc is None:
        raise ConfigError(f"{path}: the file is empty; `onnx-gate init` writes a commented example")
    plain = guard.Plainer(doc, path).value()
    with unexpected(path):
        _validate(plain, doc, path)
    if not isinstance(plain, dict):
        raise ConfigError(f"{path}: not an onnx-gate config (a mapping of keys at the top level)")
    if "model" not in plain and "models" not in plain and "include" not in plain:
        raise ConfigError(
            f"{path}:1: (top level): 'model' is a required property (or `models` for several; "
            "`onnx-gate init` writes a commented example)"
        )
    if "model" in plain and ("models" in plain or "include" in plain):
        other = "models" if "models" in plain else "include"
        raise ConfigError(
            f"{path}:{guard.line_of(doc, [other])}: {other}: give either `model` (one model) or "
            "`models`/`include` (several), not both; move `model` into `models` with a name"
        )
    return plain, doc


@contextlib.contextmanager
def unexpected(path: Path) -> Iterator[None]:
    """A problem of any other kind is still one ConfigError naming ``path``."""
    try:
        yield
    except (TypeError, ValueError, KeyError, AttributeError, OverflowError, RecursionError) as exc:
        raise ConfigError(
            f"{path}: cannot be read as an onnx-gate config "
            f"({type(exc).__name__}: {guard.one_line(str(exc))})"
        ) from None


@functools.cache
def _constructor() -> Any:
    """ruamel's round-trip constructor, except that a date stays the text it was: an impossible
    one (``until: 2026-13-01``) then reaches validation, which names its key and line, instead of
    failing the YAML parse with neither."""
    from ruamel.yaml.constructor import RoundTripConstructor

    class Constructor(RoundTripConstructor):
        pass

    Constructor.add_constructor("tag:yaml.org,2002:timestamp", lambda c, node: c.construct_scalar(node))
    return Constructor


def _validate(plain: Any, doc: Any, path: Path) -> None:
    import jsonschema

    validator = _validator_class()(schema())
    errors = sorted(
        validator.iter_errors(plain), key=lambda e: (len(e.absolute_path), list(map(str, e.path)))
    )
    if not errors:
        return
    error = jsonschema.exceptions.best_match(errors) if len(errors) > 1 else errors[0]
    raise ConfigError(_describe(error, doc, path))


@functools.cache
def _validator_class() -> Any:
    """Draft 2020-12, except that an integer is an int: ``17.0`` is not an opset, ``1.0`` not a batch."""
    import jsonschema

    base = jsonschema.Draft202012Validator
    checker = base.TYPE_CHECKER.redefine(
        "integer", lambda _checker, v: isinstance(v, int) and not isinstance(v, bool)
    )
    return jsonschema.validators.extend(base, type_checker=checker)


def _describe(error: Any, doc: Any, path: Path) -> str:
    keys = [str(k) for k in error.absolute_path]
    where = ".".join(keys) or "(top level)"
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = list(error.schema.get("properties", {}))
        unknown = [k for k in error.instance if k not in allowed]
        if unknown and allowed:
            key = unknown[0]
            line = guard.line_of(doc, [*keys, key])
            suggestion = difflib.get_close_matches(key, allowed, n=1, cutoff=0.5)
            hint = (
                f"did you mean {suggestion[0]!r}?" if suggestion else f"expected one of: {', '.join(allowed)}"
            )
            return f"{path}:{line}: {'.'.join([*keys, key])}: unknown key; {hint}"
    line = guard.line_of(doc, keys)
    if error.validator == "oneOf" and (keys == ["model"] or (keys[:1] == ["models"] and len(keys) == 2)):
        return (
            f"{path}:{line}: {where}: give either `factory` with `inputs` and `outputs` (export from "
            "PyTorch) or `onnx` (a model exported elsewhere), not both and not neither"
        )
    if error.validator == "required":
        return f"{path}:{line}: {where}: {error.message}"
    if error.validator == "enum" and keys[-1:] == ["dtype"] and str(error.instance) in hints.TORCH_DTYPES:
        meant = hints.TORCH_DTYPES[str(error.instance)]
        return (
            f"{path}:{line}: {where}: {error.instance!r} is torch's name for {meant}; write `dtype: {meant}`"
        )
    if error.validator == "enum":
        suggestion = difflib.get_close_matches(
            str(error.instance), [str(v) for v in error.validator_value], n=1
        )
        hint = f"; did you mean {suggestion[0]!r}?" if suggestion else ""
        choices = ", ".join(str(v) for v in error.validator_value)
        return f"{path}:{line}: {where}: {error.instance!r} is not one of: {choices}{hint}"
    if error.validator == "type" and hints.wants_string(error) and isinstance(error.instance, (int, float)):
        written = hints.as_written(hints.node_at(doc, keys), error.instance)
        return (
            f"{path}:{line}: {where}: YAML reads {written} as the number {error.instance!r}; "
            f'quote it: "{written}"'
        )
    if error.validator == "pattern" and keys[-1:] == ["factory"] and keys[0] in ("model", "models"):
        return (
            f"{path}:{line}: {where}: {error.instance!r} names no callable; write the file and the "
            f"function that returns the model, e.g. `{str(error.instance).rstrip(':')}:build` "
            "(path/to/file.py:callable or package.module:callable)"
        )
    if error.validator == "pattern" and keys[:1] == ["models"] and keys[-1:] == ["name"]:
        return (
            f"{path}:{line}: {where}: {error.instance!r} cannot be a model's name (it is part of target "
            "ids, file and artifact names): a letter, then up to 39 letters, digits, - or _"
        )
    if error.validator == "pattern" and keys[-1:] == ["until"] and "expected_failures" in keys:
        return f"{path}:{line}: {where}: {error.instance!r} is not a date; write YYYY-MM-DD, the last day"
    if error.validator == "pattern" and keys[:2] == ["targets", "runtimes"]:
        return (
            f"{path}:{line}: {where}: {error.instance!r} is not a runtime spec; use an exact version "
            "(1.20.1), a wildcard (1.24.*), latest, latest-N or nightly"
        )
    return f"{path}:{line}: {where}: {error.message}"
