"""How the declared inputs reach ``forward``, and how its result becomes the declared outputs.

``model.inputs`` are the flattened tensor leaves of one call, in the order declared:

- a name that is a parameter of ``forward`` binds to it (positional, keyword-only, or a ``**kwargs`` key);
- ``param.0.1`` or ``param.key`` is one leaf of a nested tuple (digits) or dict (other keys) passed as
  ``param``: ``past.0.0, past.0.1`` call ``forward(..., past=((t0, t1),))``;
- every other name fills the positional parameters left to right (those not bound by name), then
  ``*args``: a ``forward(*args)`` wrapper takes all of them, in order;
- a parameter that gets nothing keeps its default; one without a default is a one-line error.

``model.outputs`` name the leaves of what ``forward`` returns, depth first: a tensor, tuples and lists,
dict values, ``ModelOutput``-like objects (their non-None fields in order). Where the structure names a
leaf (a dict key, a ``ModelOutput`` or namedtuple field: :func:`named_leaves`), the name is what it is
matched by, and a declaration that puts those names in another order is an error of ``outputs``.

The exporters see one flat call (``FlatCall`` in torch_export.py): the graph's inputs are the leaves in
declared order and its outputs the returned leaves, so both exporters, dynamo's ``dynamic_shapes`` and the
reference outputs follow the same structure.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Mapping, Sequence
from typing import Any

from ci_onnx.contracts.errors import ConfigError

KEY = "model.inputs"

Node = Any
"""A ``Leaf``, or a tuple or dict of nodes (a nested argument)."""


@dataclasses.dataclass(frozen=True)
class Leaf:
    name: str


@dataclasses.dataclass(frozen=True)
class Binding:
    """The call ``forward(*positional, **keywords)`` with each declared input at its place."""

    positional: tuple[Node, ...]
    keywords: tuple[tuple[str, Node], ...]
    parameters: tuple[str, ...]
    """The parameter each positional node fills (``*args`` for the extra ones)."""

    def call(self, model: Any, leaves: Mapping[str, Any]) -> Any:
        args = [_build(n, leaves) for n in self.positional]
        kwargs = {k: _build(n, leaves) for k, n in self.keywords}
        return model(*args, **kwargs)

    def describe(self) -> str:
        """``forward(x=input, past=((past.0.0, past.0.1),))``: where each declared input goes."""
        parts = [f"{p}={_show(n)}" for p, n in zip(self.parameters, self.positional, strict=True)]
        parts += [f"{k}={_show(n)}" for k, n in self.keywords]
        return f"forward({', '.join(parts)})"

    def by_position(self) -> tuple[tuple[str, str], ...]:
        """(input, the parameter it fills) for each input passed by position under another name:
        ``("image", "x")`` for ``forward(x)``, ``("ids", "*args")`` for ``forward(*args)``."""
        return tuple(
            (n.name, p)
            for p, n in zip(self.parameters, self.positional, strict=True)
            if isinstance(n, Leaf) and n.name != p
        )

    @property
    def obvious(self) -> bool:
        """Each input is a plain positional parameter of the same name: nothing worth showing."""
        pairs = [*zip(self.parameters, self.positional, strict=True), *self.keywords]
        return all(isinstance(n, Leaf) and n.name == p for p, n in pairs)


def renamed_warnings(by_position: Mapping[str, str]) -> list[str]:
    """A warning per input that fills a parameter of another name (``*args`` has none to differ)."""
    return [
        f"model.inputs.{name} is passed by position as forward's parameter {param!r} (no parameter "
        f"is named {name!r}); check that it is that parameter, or name the input {param!r}"
        for name, param in by_position.items()
        if not param.startswith("*")
    ]


def shown(figures: Mapping[str, Any]) -> list[str]:
    """What the terminal and the report say of an export finding's binding (its ``call`` and
    ``by_position`` figures): nothing where each input is the parameter of its name."""
    by_position = figures.get("by_position")
    if not isinstance(by_position, Mapping) or not by_position:
        return []
    return [
        f"inputs bound as {figures.get('call', '?')}",
        *(f"warning: {w}" for w in renamed_warnings(by_position)),
    ]


def bind(forward: Any, names: Sequence[str]) -> Binding:
    """Place ``names`` (the declared inputs) onto ``forward``'s signature; user errors are ConfigErrors."""
    try:
        sig = inspect.signature(forward)
    except (TypeError, ValueError):
        return Binding(tuple(Leaf(n) for n in names), (), tuple("*args" for _ in names))
    sig = sig.replace(
        parameters=[p.replace(annotation=inspect.Parameter.empty) for p in sig.parameters.values()],
        return_annotation=inspect.Signature.empty,
    )  # errors show forward(x, mask=None), without annotations
    params = list(sig.parameters.values())
    kinds = inspect.Parameter
    by_name = {p.name: p for p in params if p.kind not in (kinds.VAR_POSITIONAL, kinds.VAR_KEYWORD)}
    var_pos = next((p.name for p in params if p.kind == kinds.VAR_POSITIONAL), "")
    var_kw = next((p.name for p in params if p.kind == kinds.VAR_KEYWORD), "")
    named: dict[str, list[tuple[list[str], str]]] = {}
    loose: list[str] = []
    for name in names:
        head, *path = name.split(".")
        if head in by_name and by_name[head].kind != kinds.POSITIONAL_ONLY:
            named.setdefault(head, []).append((path, name))
        elif var_kw and path == [] and name not in by_name and _keyword_ok(name, sig):
            named.setdefault(name, []).append(([], name))
        else:
            loose.append(name)
    nodes = {head: _nest(head, paths) for head, paths in named.items()}
    positional: list[Node] = []
    filled: list[str] = []
    keywords: list[tuple[str, Node]] = []
    order = [p for p in params if p.kind in (kinds.POSITIONAL_ONLY, kinds.POSITIONAL_OR_KEYWORD)]
    queue = list(loose)
    pending: list[inspect.Parameter] = []  # bound by name; by position if a later positional is filled
    for p in order:
        if p.name in nodes:
            pending.append(p)
            continue
        if not queue:
            break
        for skipped in pending:  # bound by name, but a later positional follows: pass it by position
            positional.append(nodes.pop(skipped.name))
            filled.append(skipped.name)
        pending = []
        positional.append(Leaf(queue.pop(0)))
        filled.append(p.name)
    if queue:
        if not var_pos:
            extra = ", ".join(repr(n) for n in queue)
            raise ConfigError(
                f"{KEY}: {extra} fit(s) no parameter of forward{sig}: name each input after a parameter "
                "(or param.0 for a leaf of a tuple argument), or remove it"
            )
        for skipped in pending:  # *args follow: every positional before them goes by position
            positional.append(nodes.pop(skipped.name))
            filled.append(skipped.name)
        positional += [Leaf(n) for n in queue]
        filled += [f"*{var_pos}"] * len(queue)
    keywords = list(nodes.items())
    given = set(filled) | set(nodes)
    for p in params:
        if p.kind in (kinds.VAR_POSITIONAL, kinds.VAR_KEYWORD) or p.name in given:
            continue
        if p.default is inspect.Parameter.empty:
            raise ConfigError(
                f"{KEY}: forward{sig} needs the parameter {p.name!r}, and no declared input reaches it; "
                f"declare model.inputs.{p.name} (or {p.name}.0 … for a tuple), or give it a default"
            )
    return Binding(tuple(positional), tuple(keywords), tuple(filled))


def _keyword_ok(name: str, sig: inspect.Signature) -> bool:
    return name.isidentifier() and name not in sig.parameters


def _nest(head: str, paths: list[tuple[list[str], str]]) -> Node:
    """The structure passed as ``head`` from its leaves' paths (``[]`` is the parameter itself)."""
    if any(not path for path, _ in paths):
        if len(paths) > 1:
            raise ConfigError(
                f"{KEY}: {head!r} is declared both as one tensor and as a leaf of a structure "
                f"({', '.join(n for _, n in paths)}); keep one"
            )
        return Leaf(paths[0][1])
    groups: dict[str, list[tuple[list[str], str]]] = {}
    for path, name in paths:
        groups.setdefault(path[0], []).append((path[1:], name))
    children = {key: _nest(f"{head}.{key}", [(p, n) for p, n in group]) for key, group in groups.items()}
    if all(k.isdigit() for k in children):
        indices = sorted(int(k) for k in children)
        if indices != list(range(len(indices))):
            raise ConfigError(
                f"{KEY}: the leaves of {head!r} are numbered {indices}; number a tuple's items 0, 1, 2 … "
                "without gaps"
            )
        return tuple(children[str(i)] for i in indices)
    return dict(children)


def _build(node: Node, leaves: Mapping[str, Any]) -> Any:
    if isinstance(node, Leaf):
        return leaves[node.name]
    if isinstance(node, tuple):
        return tuple(_build(n, leaves) for n in node)
    if isinstance(node, dict):
        return {k: _build(n, leaves) for k, n in node.items()}
    raise TypeError(f"not a binding node: {node!r}")


def _show(node: Node) -> str:
    if isinstance(node, Leaf):
        return node.name
    if isinstance(node, tuple):
        inner = ", ".join(_show(n) for n in node)
        return f"({inner},)" if len(node) == 1 else f"({inner})"
    return "{" + ", ".join(f"{k!r}: {_show(n)}" for k, n in node.items()) + "}"


def flatten(result: Any) -> list[Any]:
    """Tensors in the order a model returned them: a tensor, tuples/lists, dicts, ModelOutput, pytrees."""
    return [t for _, t in named_leaves(result)]


def named_leaves(result: Any, path: tuple[str, ...] = ()) -> list[tuple[str | None, Any]]:
    """Each returned tensor with the name the model's structure gives it, in :func:`flatten`'s order.

    A dict key, a ``ModelOutput`` field or a namedtuple field names what it holds (``logits``;
    ``past_key_values.0.1`` below it); a leaf reached through plain tuples and lists only has no name
    (None): only its position says what it is.
    """
    import torch

    if isinstance(result, torch.Tensor):
        keyed = path[next((i for i, p in enumerate(path) if not p.isdigit()), len(path)) :]
        return [(".".join(keyed) if keyed else None, result)]
    if result is None or isinstance(result, (int, float, bool, str)):
        return []
    if hasattr(result, "to_tuple") and hasattr(result, "keys"):  # a ModelOutput: its non-None fields
        return [leaf for key in list(result) for leaf in named_leaves(result[key], (*path, str(key)))]
    if isinstance(result, dict):
        return [leaf for key, item in result.items() for leaf in named_leaves(item, (*path, str(key)))]
    if isinstance(result, tuple) and hasattr(type(result), "_fields"):  # a namedtuple
        fields: tuple[str, ...] = type(result)._fields  # type: ignore[attr-defined]
        return [
            leaf
            for key, item in zip(fields, result, strict=True)
            for leaf in named_leaves(item, (*path, key))
        ]
    if hasattr(result, "to_tuple"):
        result = result.to_tuple()
    if isinstance(result, (list, tuple)):
        return [leaf for i, item in enumerate(result) for leaf in named_leaves(item, (*path, str(i)))]
    from torch.utils import _pytree

    leaves = _pytree.tree_leaves(result)
    if len(leaves) == 1 and leaves[0] is result:
        return []
    return [(None, t) for t in leaves if isinstance(t, torch.Tensor)]
