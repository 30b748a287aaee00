"""What onnx-gate.yml must be before anything parses, expands or validates it.

A config is a page of YAML written by a person; the file onnx-gate reads may be anything (a fork's
pull request, a wrong path, an alias bomb). These checks refuse what no config holds, each as one
ConfigError naming the file, line and key: more than a page, bytes that are not UTF-8, flow nesting
deeper than a config's, values that aliases expand past a config's size, keys that are not names,
numbers that are not finite or do not fit an int32.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ci_onnx.contracts.errors import ConfigError

MAX_BYTES = 1 << 20
"""A config is a page of YAML; anything larger is not one (and would be slow to validate)."""
MAX_NODES = 20_000
"""Values after aliases are expanded: a few hundred in a real config, billions in an alias bomb."""
MAX_DEPTH = 32
MAX_INT = 2**31 - 1
"""Every integer in the file (opsets, dims, batch sizes, seeds, counts) fits in an int32."""


def read_text(path: Path) -> str:
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError(
            f"{path}: no such file; pass --config or run `onnx-gate init` to write one"
        ) from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if len(raw) > MAX_BYTES:
        raise ConfigError(f"{path}: larger than {MAX_BYTES >> 10} KiB; is this onnx-gate.yml?")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigError(
            f"{path}:{line}: not UTF-8 text (byte {raw[exc.start]:#04x}); save it as UTF-8"
        ) from None
    return text


def check_flow_depth(text: str, path: Path) -> None:
    """Refuse ``[[[[…`` before the YAML parser sees it (it takes seconds on ten thousand levels)."""
    depth, quote = 0, ""
    for n, ch in enumerate(text):
        if quote:
            quote = "" if ch in (quote, "\n") else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                line = text.count("\n", 0, n) + 1
                raise ConfigError(f"{path}:{line}: nested deeper than {MAX_DEPTH} levels")
        elif ch in "]}":
            depth = max(0, depth - 1)


def one_line(text: str | None) -> str:
    line = " ".join((text or "").split())
    return line if len(line) <= 200 else line[:199] + "…"


def line_of(doc: Any, keys: list[str]) -> int:
    """1-based line of the deepest node along ``keys`` that the YAML document can locate."""
    node = doc
    line = 1
    for key in keys:
        lc = getattr(node, "lc", None)
        if isinstance(node, dict):
            match = next((k for k in node if str(k) == key), None)
            if match is None:
                break
            if lc is not None:
                line = lc.key(match)[0] + 1
            node = node[match]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            if lc is not None:
                line = lc.item(int(key))[0] + 1
            node = node[int(key)]
        else:
            break
    return line


def depth_of(doc: Any, keys: Sequence[str]) -> int:
    """How many of ``keys`` the YAML document holds, from the top."""
    node = doc
    for n, key in enumerate(keys):
        if isinstance(node, dict):
            match = next((k for k in node if str(k) == key), None)
            if match is None:
                return n
            node = node[match]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return n
    return len(keys)


@dataclasses.dataclass(frozen=True)
class Layer:
    """One file's part in a model's effective config: where its sections and its model keys are."""

    path: Path
    doc: Any
    sections: tuple[str, ...] = ()
    """The keys above this layer's ``export``, ``verify`` …: () at the top of a file,
    ``("models", "1")`` for a model's block."""
    model: tuple[str, ...] | None = None
    """The keys of the model's own block (``("model",)``, ``("models", "1")``); None where this
    layer holds no model keys (the top of a file that lists several)."""

    def real(self, keys: Sequence[str]) -> tuple[str, ...] | None:
        """Where ``keys`` of the effective config (``model.inputs.x``, ``verify.seed``) are in this file."""
        if keys and keys[0] == "model":
            return None if self.model is None else (*self.model, *keys[1:])
        return (*self.sections, *keys)


@dataclasses.dataclass(frozen=True)
class Where:
    """Names a key of a model's effective config where it was written: ``file:line: key``.

    A model of ``models`` takes its sections from the top of the file, the top of the file that
    included it, and its own block (most specific last): a key is named in the layer that wrote the
    most of it. With one layer (the single ``model`` form) it is the file's own line and key."""

    layers: tuple[Layer, ...]

    def source(self, keys: Sequence[str]) -> tuple[Layer, tuple[str, ...], int]:
        """The layer that holds the most of ``keys`` (the most specific on a tie), the keys there,
        and how many of them it holds (0: none writes it; the schema's default)."""
        best: tuple[Layer, tuple[str, ...], int] | None = None
        for layer in self.layers:
            real = layer.real(keys)
            if real is None:
                continue
            held = depth_of(layer.doc, real) - len(layer.sections if keys[:1] != ["model"] else ())
            if best is None or held >= best[2]:
                best = (layer, real, max(0, held))
        assert best is not None, "every model has a layer with its own keys"
        return best

    def __call__(self, keys: Sequence[str]) -> str:
        layer, real, _ = self.source(keys)
        return f"{layer.path}:{line_of(layer.doc, list(real))}: {'.'.join(real) or '(top level)'}"

    def inherited(self, keys: Sequence[str]) -> bool:
        """``keys`` come from a file's top, shared with other models, not from the model's block."""
        layer, _, held = self.source(keys)
        return held > 0 and layer.model is None and len(self.layers) > 1


class Plainer:
    """ruamel's round-trip nodes as plain JSON-like values (mapping keys as strings), refusing what
    no config holds before anything expands or validates it: an alias bomb (too many values), deep
    nesting, a number that is not finite or an integer past int32, a key that is not a scalar."""

    def __init__(self, doc: Any, path: Path) -> None:
        self.doc = doc
        self.path = path
        self.nodes = 0

    def value(self) -> Any:
        return self._plain(self.doc, [])

    def _fail(self, keys: list[str], why: str) -> ConfigError:
        where = ".".join(keys) or "(top level)"
        return ConfigError(f"{self.path}:{line_of(self.doc, keys)}: {where}: {why}")

    def _plain(self, node: Any, keys: list[str]) -> Any:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise self._fail(
                keys, f"more than {MAX_NODES} values (YAML aliases expanding?); simplify the file"
            )
        if len(keys) > MAX_DEPTH:
            raise self._fail(keys, f"nested deeper than {MAX_DEPTH} levels")
        if isinstance(node, dict):
            out = {}
            for k, v in node.items():
                if isinstance(k, bool) or not isinstance(k, (str, int, float)):
                    raise self._fail(keys, f"a key must be a plain name, not {type(k).__name__} {k!r:.60}")
                out[str(k)] = self._plain(v, [*keys, str(k)])
            return out
        if isinstance(node, list):
            return [self._plain(v, [*keys, str(i)]) for i, v in enumerate(node)]
        if isinstance(node, bool) or type(node).__name__ == "ScalarBoolean":
            return bool(node)
        if node is None or isinstance(node, str):
            return str(node) if isinstance(node, str) else node
        if isinstance(node, float):
            if not math.isfinite(node):
                raise self._fail(keys, f"{node!r} is not a finite number")
            return float(node)
        if isinstance(node, int):
            if abs(node) > MAX_INT:
                raise self._fail(keys, f"{int(node)} is out of range (at most {MAX_INT})")
            return int(node)
        return str(node)  # dates, timestamps and other YAML scalars: as written
