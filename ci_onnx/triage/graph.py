"""The graph as triage walks it: nodes in topological order, where each came from, and the same graph
with every intermediate tensor exposed as a graph output.

Runs on onnx-gate's side (onnx, numpy), never in a target's environment.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

EXTERNAL_BYTES = 1_500_000_000
"""Above this an exposed graph is saved with its weights beside it (protobuf's 2 GiB limit)."""
WRAPPER = "model"
"""The attribute the export's flat wrapper keeps the user's module under (ci_onnx.export.torch_export)."""


@dataclasses.dataclass(frozen=True)
class Node:
    name: str
    op_type: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    module: str = ""
    """The PyTorch module path the node came from (``features.2``), where the export says so."""
    source: str = ""
    """The model's source line that made it (``model.py:38``), where the export says so."""
    domain: str = ""
    fx_node: str = ""
    """The exported program's node it came from, as dynamo records it (``pkg.torch.onnx.fx_node``:
    ``%mul : [num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%relu, …))``)."""

    @property
    def fx(self) -> str:
        """The name of :attr:`fx_node` (``mul``), or empty."""
        m = _FX.match(self.fx_node)
        return m["name"] if m else ""


@dataclasses.dataclass(frozen=True)
class Graph:
    nodes: tuple[Node, ...]
    """In topological order."""
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    initializers: frozenset[str]

    def producer(self) -> dict[str, Node]:
        return {o: n for n in self.nodes for o in n.outputs if o}

    def consumers(self) -> dict[str, list[Node]]:
        out: dict[str, list[Node]] = {}
        for n in self.nodes:
            for i in n.inputs:
                out.setdefault(i, []).append(n)
        return out

    def node(self, name: str) -> Node | None:
        return next((n for n in self.nodes if n.name == name), None)

    def ancestors_of(self, value: str) -> set[str]:
        """The names of the nodes ``value`` depends on."""
        made_by = self.producer()
        seen: set[str] = set()
        todo = [value]
        while todo:
            n = made_by.get(todo.pop())
            if n is None or n.name in seen:
                continue
            seen.add(n.name)
            todo.extend(n.inputs)
        return seen


def load(path: Path) -> Any:
    import onnx

    return onnx.load(str(path), load_external_data=True)


def of(model: Any) -> Graph:
    """The walkable graph of an onnx ModelProto (its main graph; subgraphs stay inside their node)."""
    g = model.graph
    inits = frozenset(i.name for i in g.initializer)
    nodes = []
    for i, n in enumerate(g.node):
        meta = {p.key: p.value for p in n.metadata_props}
        module, source = _origin(n.name, meta)
        nodes.append(
            Node(
                n.name or f"{n.op_type}_{i}",
                n.op_type,
                tuple(n.input),
                tuple(n.output),
                module,
                source,
                n.domain,
                meta.get("pkg.torch.onnx.fx_node", ""),
            )
        )
    graph_inputs = tuple(i.name for i in g.input if i.name not in inits)
    return Graph(
        _topological(nodes, set(graph_inputs) | inits), graph_inputs, tuple(o.name for o in g.output), inits
    )


def _topological(nodes: Sequence[Node], available: set[str]) -> tuple[Node, ...]:
    """Kahn's order, stable in file order; a value no node makes (an outer scope's) counts as given."""
    made = {o for n in nodes for o in n.outputs}
    known = set(available) | {""}
    pending = list(nodes)
    out: list[Node] = []
    while pending:
        ready = [n for n in pending if all(i in known or i not in made for i in n.inputs)]
        if not ready:  # a cycle cannot be in a valid graph; keep the rest in file order
            out.extend(pending)
            break
        for n in ready:
            out.append(n)
            known.update(n.outputs)
        pending = [n for n in pending if n not in ready]
    return tuple(out)


_TS_NAME = re.compile(r"^/(?P<scopes>.+)/[A-Za-z]+(?:_\d+)?$")


def _origin(name: str, meta: Mapping[str, str]) -> tuple[str, str]:
    """The module path and source line of a node: dynamo's metadata, or TorchScript's scoped name."""
    scopes_text = meta.get("pkg.torch.onnx.name_scopes", "")
    module = ""
    if scopes_text:
        scopes = [s.strip(" '\"") for s in scopes_text.strip("[]").split(",")]
        modules = [s for s in scopes[:-1] if s]
        module = modules[-1] if modules else ""
    else:
        m = _TS_NAME.match(name)
        if m:
            module = m["scopes"].split("/")[-1]
    module = module.removeprefix(WRAPPER + ".") if module != WRAPPER else ""
    return module, _source_line(meta.get("pkg.torch.onnx.stack_trace", ""))


_FX = re.compile(r"^%(?P<name>[^\s:]+)\s*:")
FX = "fx:"
"""The prefix of PyTorch's values of the exported program's nodes, beside its module outputs."""


_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)')


def _source_line(trace: str) -> str:
    """The deepest frame of the trace in the model's own code (not torch's, not onnx-gate's)."""
    frames = [
        (m["file"], m["line"])
        for m in _FRAME.finditer(trace)
        if "/torch/" not in m["file"] and "/ci_onnx/" not in m["file"] and "site-packages" not in m["file"]
    ]
    if not frames:
        return ""
    file, line = frames[-1]
    return f"{Path(file).name}:{line}"


def expose(model: Any, skip: Iterable[str] = (), only: Collection[str] | None = None) -> Any:
    """A copy of ``model`` whose graph outputs are its outputs followed by every other node output of
    the main graph (of ``only`` where given; typed where shape inference knows the type): what the
    graph says at each node."""
    import onnx

    exposed = onnx.ModelProto()
    exposed.CopyFrom(model)
    g = exposed.graph
    typed = {}
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
        typed = {v.name: v for v in inferred.graph.value_info}
    except Exception:  # an op shape inference does not know: the runtime learns the type itself
        pass
    present = {o.name for o in g.output} | set(skip)
    for n in g.node:
        for out in n.output:
            if not out or out in present or (only is not None and out not in only):
                continue
            present.add(out)
            info = typed.get(out)
            if info is not None and info.type.HasField("tensor_type"):
                vi = onnx.ValueInfoProto()
                vi.CopyFrom(info)
                vi.type.tensor_type.ClearField("shape")
                g.output.append(vi)
            elif info is None:
                g.output.append(onnx.helper.make_empty_tensor_value_info(out))
    del g.value_info[:]
    return exposed


def save(model: Any, path: Path) -> Path:
    import onnx

    path.parent.mkdir(parents=True, exist_ok=True)
    big = model.ByteSize() > EXTERNAL_BYTES if hasattr(model, "ByteSize") else False
    if big:
        onnx.save(model, str(path), save_as_external_data=True, location=path.name + ".data")
    else:
        onnx.save(model, str(path))
    return path


INPUT = "#input"
"""A module's input among PyTorch's values (ci_onnx.triage.torchref.INPUT)."""


def _shape(arr: Any) -> tuple[int, ...]:
    return tuple(getattr(arr, "shape", ()))


def module_values(
    graph: Graph,
    modules: Mapping[str, Any],
    shapes: Mapping[str, tuple[int, ...]],
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """PyTorch's values (module path → its output; ``path#input`` → its input; ``fx:<node>`` → a node
    of the exported program, by dynamo's metadata, where no module's value is there) by the ONNX value
    that holds the same thing: a module's output at the last value its nodes hand on (out of the
    module or the graph) with that shape; its input at the value its nodes take in from outside it
    with that shape. A module with no node of its own whose input is another module's output was
    fused into it by the export (a BatchNormalization folded into its Conv): the value that module
    hands on holds the fused module's output, and is compared with that. ``labels`` is filled with
    what each value is in PyTorch (``a``, ``b#input``)."""
    import numpy as np

    consumers = graph.consumers()
    made_by = graph.producer()
    outputs = set(graph.outputs)
    found: dict[str, Any] = {}
    outs = {p: a for p, a in modules.items() if not p.endswith(INPUT) and not p.startswith(FX)}
    ins = {p.removesuffix(INPUT): a for p, a in modules.items() if p.endswith(INPUT)}
    inside_of = {
        path: [n for n in graph.nodes if n.module == path or n.module.startswith(path + ".")] for path in outs
    }
    for path, arr in outs.items():
        inside = inside_of[path]
        if not inside:
            continue
        names = {n.name for n in inside}
        handed_on = [
            o
            for n in inside
            for o in n.outputs
            if o and (o in outputs or any(c.name not in names for c in consumers.get(o, [])))
        ]
        fitting = [o for o in handed_on if tuple(shapes.get(o, ())) == _shape(arr)]
        if not fitting or fitting[-1] in found:
            continue
        fused = [
            q
            for q, later in outs.items()
            if not inside_of[q]
            and q in ins
            and _shape(ins[q]) == _shape(arr)
            and _shape(later) == _shape(arr)
            and np.array_equal(ins[q], arr)
        ]
        found[fitting[-1]] = outs[fused[-1]] if fused else arr
        said = {fitting[-1]: fused[-1] if fused else path}
        taken_in = [
            i
            for n in inside
            for i in n.inputs
            if i and i not in graph.initializers and (made_by.get(i) is None or made_by[i].name not in names)
        ]
        if path in ins:
            fits = [i for i in taken_in if tuple(shapes.get(i, ())) == _shape(ins[path])]
            if fits and fits[0] not in found:
                found[fits[0]] = ins[path]
                said[fits[0]] = path + INPUT
        if labels is not None:
            labels.update(said)
    by_fx: dict[str, list[Node]] = {}
    for n in graph.nodes:
        if n.fx:
            by_fx.setdefault(n.fx, []).append(n)
    for key, arr in modules.items():  # the exported program's nodes: values no module hands on
        if not key.startswith(FX):
            continue
        made = [
            o for n in by_fx.get(key[len(FX) :], []) for o in n.outputs if o and shapes.get(o) == _shape(arr)
        ]
        # a module's input that this node makes is this node's output first: it is blamed alone
        taken = made and made[-1] in found and not (labels or {}).get(made[-1], "").endswith(INPUT)
        if made and not taken:
            found[made[-1]] = arr
            if labels is not None:
                labels[made[-1]] = key
    return found


def fx_wanted(graph: Graph, values: Collection[str] | None = None) -> dict[str, str]:
    """The exported program's nodes whose values PyTorch is asked for (name → the node as dynamo
    recorded it, so that PyTorch's own export of the model gives a value only for the same node):
    those that made a value of ``values`` (every one where None)."""
    return {n.fx: n.fx_node for n in graph.nodes if n.fx and (values is None or set(n.outputs) & set(values))}
