"""Several models in one gate: ``models``, ``include``, and the one cascade of their settings.

A model's effective settings come from, least specific first: the schema's defaults, the top of the
file onnx-gate reads, the top of the file ``include`` brought the model from (where it came from
one), and the model's own block. Mappings merge key by key; any other value (a list, a number)
replaces what came before, as cibuildwheel's overrides do. ``gate`` is the gate's, set at the top of
the first file only; ``expected_failures`` at the top select among every id, a model's own (in its
block, or at the top of its included file) among its own ids. ``onnx-gate plan --explain`` shows
every effective value and the file and line it came from (:func:`explain`).

Every file is validated against the schema as written, so an unknown key in a model's block is one
line naming that file, line and key; a duplicate name, an include that matches nothing and a
section only the top file may set are one line each too.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ci_onnx.config import Config, build, guard, read, schema
from ci_onnx.contracts.errors import ConfigError

SECTIONS = ("export", "verify", "targets", "budgets")
"""What the top of a file sets for its models, and a model's block may override."""
OWN = (*SECTIONS, "expected_failures")
"""The keys of a model's block that are not the model's own keys."""
TOP_ONLY = ("gate", "include")
"""Keys an included file may not set: one gate, one level of includes."""


@functools.cache
def name_pattern() -> re.Pattern[str]:
    """A model's name: the schema's pattern, since the name reaches ids, paths and artifact names."""
    return re.compile(schema()["$defs"]["model_block"]["properties"]["name"]["pattern"])


@dataclasses.dataclass(frozen=True)
class _Tier:
    """One layer of a model's settings and the plain values at its sections."""

    layer: guard.Layer
    values: dict[str, Any]


@dataclasses.dataclass(frozen=True)
class _Declared:
    name: str
    block: dict[str, Any]
    tiers: tuple[_Tier, ...]
    """Least specific first; the last is the model's own block."""

    @property
    def own(self) -> guard.Layer:
        return self.tiers[-1].layer

    def where(self) -> guard.Where:
        return guard.Where(tuple(t.layer for t in self.tiers))


def load_all(path: Path) -> tuple[Config, ...]:
    """Every model of ``path``: the one of a ``model`` file, or each of ``models`` and ``include``
    with the cascade applied, in the order they are declared."""
    plain, doc = read(guard.read_text(path), path)
    if "model" in plain:
        return (build(plain, guard.Where((guard.Layer(path, doc, (), ("model",)),)), path),)
    return configs(plain, doc, path)


def load_one(path: Path, model: str = "") -> Config:
    """The model named ``model`` of ``path`` (its id; "" for a file of one model, in either form)."""
    every = load_all(path)
    if not model and len(every) == 1:
        return every[0]
    for cfg in every:
        if cfg.model.id == model:
            return cfg
    names = ", ".join(c.model.id for c in every)
    raise ConfigError(f"{path}: no model named {model!r} (it holds {names}); `onnx-gate plan` lists the ids")


def configs(plain: dict[str, Any], doc: Any, path: Path) -> tuple[Config, ...]:
    """Each model of the ``models``/``include`` file ``path`` (read as ``plain`` and ``doc``)."""
    top = _Tier(guard.Layer(path, doc, (), None), plain)
    declared = _blocks(plain, top, ())
    for included, inc_plain, inc_doc in _included(plain, doc, path):
        declared += _from_included(included, inc_plain, inc_doc, top)
    _unique(declared)
    return tuple(_config(d, plain, path) for d in declared)


def _blocks(plain: dict[str, Any], top: _Tier, above: tuple[_Tier, ...]) -> list[_Declared]:
    """The models of one file's ``models`` (a list of named blocks, or a mapping name → block)."""
    layer = top.layer
    models = plain.get("models", [])
    named = enumerate(models) if isinstance(models, list) else models.items()
    out = []
    for key, block in named:
        keys = ("models", str(key))
        name = block["name"] if isinstance(models, list) else str(key)
        if isinstance(models, dict) and block.get("name", name) != name:
            at = guard.line_of(layer.doc, [*keys, "name"])
            raise ConfigError(
                f"{layer.path}:{at}: {'.'.join(keys)}.name: {block['name']!r} differs from its key "
                f"{name!r}; in a mapping the key is the name: drop `name`"
            )
        if not name_pattern().match(name):
            where = [*keys, "name"] if isinstance(models, list) else keys
            raise _bad_name(layer.path, guard.line_of(layer.doc, list(where)), ".".join(where), name)
        own = guard.Layer(layer.path, layer.doc, keys, keys)
        out.append(_Declared(name, block, (*above, top, _Tier(own, block))))
    return out


def _bad_name(path: Path, line: int, key: str, name: str) -> ConfigError:
    return ConfigError(
        f"{path}:{line}: {key}: {name!r} cannot be a model's name (it is part of target ids, file and "
        "artifact names): a letter, then up to 39 letters, digits, - or _"
    )


def _included(plain: dict[str, Any], doc: Any, path: Path) -> list[tuple[Path, dict[str, Any], Any]]:
    """The files ``include`` names, each read and validated, in the order of the globs (sorted
    within one); a glob that matches no file is an error, a file matched twice is read once."""
    seen = {path.resolve()}
    out = []
    for i, pattern in enumerate(plain.get("include", [])):
        if Path(pattern).is_absolute():
            raise ConfigError(
                f"{path}:{guard.line_of(doc, ['include', str(i)])}: include.{i}: {pattern!r} is absolute; "
                "give a glob relative to this file's directory"
            )
        found = sorted(p for p in path.parent.glob(pattern) if p.is_file())
        if not found:
            raise ConfigError(
                f"{path}:{guard.line_of(doc, ['include', str(i)])}: include.{i}: {pattern!r} matches no "
                f"file in {path.parent}; fix the glob, or remove it"
            )
        for file in found:
            if file.resolve() in seen:
                continue
            seen.add(file.resolve())
            inc_plain, inc_doc = read(guard.read_text(file), file)
            for key in TOP_ONLY:
                if key in inc_plain:
                    raise ConfigError(
                        f"{file}:{guard.line_of(inc_doc, [key])}: {key}: set in {path.name} only (a file "
                        f"that {path.name} includes cannot set it); move it there"
                    )
            out.append((file, inc_plain, inc_doc))
    return out


def _from_included(path: Path, plain: dict[str, Any], doc: Any, top: _Tier) -> list[_Declared]:
    """The models of one included file: its ``model`` (named by ``model.name``, else by its
    directory), or each of its ``models``, below the including file's top and its own."""
    own_top = _Tier(guard.Layer(path, doc, (), None if "models" in plain else ("model",)), plain)
    if "models" in plain:
        return _blocks(plain, own_top, (top,))
    block = plain["model"]
    name = block.get("name") or path.parent.resolve().name
    if not name_pattern().match(name):
        key = ["model", "name"] if "name" in block else ["model"]
        raise _bad_name(path, guard.line_of(doc, key), ".".join(key), name)
    return [_Declared(name, {**block, "name": name}, (top, own_top))]


def _unique(declared: Sequence[_Declared]) -> None:
    """Names differ (ignoring case: a file system may): they are part of ids and file names."""
    first: dict[str, _Declared] = {}
    for d in declared:
        seen = first.setdefault(d.name.lower(), d)
        if seen is d:
            continue
        raise ConfigError(
            f"{_name_at(d)}: {d.name!r} is already the name of the model at {_name_at(seen, key=False)}; "
            "each model needs its own name (it is part of target ids)"
        )


def _name_at(d: _Declared, key: bool = True) -> str:
    layer = d.own
    keys = [*(layer.model or ()), "name"]
    where = f"{layer.path}:{guard.line_of(layer.doc, keys)}"
    return f"{where}: {'.'.join(keys[: guard.depth_of(layer.doc, keys)] or keys)}" if key else where


def merge(base: Any, over: Any) -> Any:
    """``over`` on top of ``base``: mappings key by key, anything else replaced."""
    if isinstance(base, dict) and isinstance(over, dict):
        return {**base, **{k: merge(base[k], v) if k in base else v for k, v in over.items()}}
    return over


def _effective(d: _Declared, section: str) -> dict[str, Any]:
    """``section`` of model ``d``, merged over its tiers. An ONNX-only model is verified at its
    file's opset: the opsets and exporters the top sets for exporting do not reach it."""
    value: dict[str, Any] = {}
    for tier in d.tiers:
        given = tier.values.get(section, {})
        if section == "export" and "onnx" in d.block and tier.layer.model is None:
            given = {k: v for k, v in given.items() if k not in ("opsets", "exporters")}
        value = merge(value, given)
    return value


def _config(d: _Declared, root: dict[str, Any], path: Path) -> Config:
    effective: dict[str, Any] = {
        "version": root.get("version", 1),
        "model": {**{k: v for k, v in d.block.items() if k not in OWN}, "name": d.name},
    }
    for section in SECTIONS:
        effective[section] = _effective(d, section)
    own = [t.values["expected_failures"] for t in d.tiers[1:] if "expected_failures" in t.values]
    effective["expected_failures"] = own[-1] if own else []
    effective["shared_failures"] = root.get("expected_failures", [])
    effective["gate"] = root.get("gate", {})
    layer = d.own
    return build(
        effective,
        d.where(),
        path,
        named=True,
        model_file=layer.path if layer.path != path else None,
        model_keys=layer.model or ("model",),
    )


# -- explain ------------------------------------------------------------------------------------


def explain(path: Path) -> str:
    """Every model's effective settings, one key a line, with the file and line that set it (or
    ``default``): what ``onnx-gate plan --explain`` prints."""
    plain, doc = read(guard.read_text(path), path)
    if "model" in plain:
        declared = [_Declared("", plain["model"], (_Tier(guard.Layer(path, doc, (), ("model",)), plain),))]
    else:
        top = _Tier(guard.Layer(path, doc, (), None), plain)
        declared = _blocks(plain, top, ())
        for included, inc_plain, inc_doc in _included(plain, doc, path):
            declared += _from_included(included, inc_plain, inc_doc, top)
    blocks = []
    for d in declared:
        where = d.where()
        rows = [("model", _show(d.name or "(the one model; ids carry no name)"), _at(where, ["model"]))]
        for section in SECTIONS:
            value = merge(_defaults(schema()["properties"][section]), _effective(d, section))
            for keys, leaf in _leaves([section], value):
                rows.append((".".join(keys), _show(leaf), _at(where, keys)))
        width = max(len(r[0]) for r in rows)
        shown = max(len(r[1]) for r in rows)
        lines = [f"{k:<{width}}  {v:<{min(shown, 40)}}  {at}" for k, v, at in rows]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _at(where: guard.Where, keys: Sequence[str]) -> str:
    layer, real, held = where.source(keys)
    if keys[:1] != ["model"] and held < len(keys):
        return "default"
    return f"{layer.path}:{guard.line_of(layer.doc, list(real))}"


def _defaults(node: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, sub in node.get("properties", {}).items():
        if sub.get("type") == "object" and "properties" in sub and "default" in sub:
            out[key] = _defaults(sub)
        elif "default" in sub:
            out[key] = sub["default"]
    return out


def _leaves(keys: list[str], value: Any) -> list[tuple[list[str], Any]]:
    if isinstance(value, dict) and value:
        return [leaf for k, v in value.items() for leaf in _leaves([*keys, str(k)], v)]
    return [(keys, value)]


def _show(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, separators=(", ", ": "))
    return text if len(text) <= 60 else text[:59] + "…"
