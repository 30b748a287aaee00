"""The import graph of the package, read from the source (nothing is imported): every ``import`` and
``from … import`` of a module, at its top or inside a function, except those under ``if
TYPE_CHECKING:`` (they never run). The tests of the import rules build on it."""

from __future__ import annotations

import ast
import dataclasses
import functools
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).parents[2]
PACKAGE = ROOT / "ci_onnx"


@dataclasses.dataclass(frozen=True)
class Edge:
    source: str
    """The importing module (``ci_onnx.verify.judge``)."""
    target: str
    """The imported module (``ci_onnx.contracts.results``), or the top-level name of another package (``numpy``)."""
    line: int
    lazy: bool
    """Inside a function: imported when it runs, not with the module."""


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


@functools.cache
def modules() -> dict[str, Path]:
    """Every module of the package, by name."""
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _resolve(name: str) -> str:
    """``ci_onnx.runners.base.Launch`` → ``ci_onnx.runners.base``: the longest prefix that is a module."""
    parts = name.split(".")
    if parts[0] != "ci_onnx":
        return parts[0]
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in modules():
            return ".".join(parts[:n])
    return name


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(node: ast.AST, lazy: bool) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _type_checking(child):
            for other in child.orelse:
                yield from _walk(other, lazy)
            continue
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child, lazy
        inner = lazy or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        yield from _walk(child, inner)


@functools.cache
def edges_of(module: str) -> tuple[Edge, ...]:
    path = modules()[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = []
    for node, lazy in _walk(ast.parse(path.read_text(), str(path)), False):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            names = [f"{base}.{a.name}" for a in node.names]
            names = [n if _resolve(n) != base or n in modules() else base for n in names]
        for name in names:
            target = _resolve(name)
            if target != module:
                out.append(Edge(module, target, node.lineno, lazy))
    return tuple(out)


def edges() -> list[Edge]:
    """Every import between two modules of the package."""
    return [e for m in modules() for e in edges_of(m) if e.target in modules()]


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found
