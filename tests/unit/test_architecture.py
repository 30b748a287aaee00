"""ARCHITECTURE.md's layers are the package's: every module is in one layer, no import goes up a
layer, and no modules import each other round in a circle. The layers are read from the page, so a
change to either that the other does not follow fails here."""

from __future__ import annotations

import fnmatch

import pytest

from tests.support import imports

PAGE = imports.ROOT / "ARCHITECTURE.md"


def layers(text: str) -> list[tuple[str, list[str]]]:
    """The ```layers block: (name, module patterns) from the top layer to the bottom one."""
    block = text.split("```layers\n", 1)[1].split("```", 1)[0]
    return [(line.split()[0], line.split()[1:]) for line in block.splitlines() if line.strip()]


def layer_of(module: str, declared: list[tuple[str, list[str]]]) -> list[int]:
    """The depth (0 = bottom) of each layer whose patterns name ``module``."""
    found = []
    for depth, (_name, patterns) in enumerate(reversed(declared)):
        for p in patterns:
            stem = p.removesuffix(".*")
            if module == p or (p.endswith(".*") and (module == stem or fnmatch.fnmatchcase(module, p))):
                found.append(depth)
                break
    return found


def upward(declared: list[tuple[str, list[str]]]) -> list[str]:
    problems = []
    for e in imports.edges():
        below, above = layer_of(e.source, declared), layer_of(e.target, declared)
        if below and above and above[0] > below[0]:
            names = [n for n, _ in reversed(declared)]
            problems.append(
                f"{e.source}:{e.line} ({names[below[0]]}) imports {e.target} ({names[above[0]]}), a layer above"
            )
    return problems


def test_every_module_is_in_exactly_one_layer() -> None:
    declared = layers(PAGE.read_text())
    assert [n for n, _ in declared][-1] == "contracts"
    misplaced = {m: layer_of(m, declared) for m in imports.modules()}
    assert {m: d for m, d in misplaced.items() if len(d) != 1} == {}


def test_no_import_goes_up_a_layer() -> None:
    assert upward(layers(PAGE.read_text())) == []


def test_no_modules_import_each_other_in_a_circle() -> None:
    graph: dict[str, set[str]] = {}
    for e in imports.edges():
        graph.setdefault(e.source, set()).add(e.target)
    assert imports.cycles(graph) == []


@pytest.mark.parametrize(
    ("graph", "found"),
    [
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
        ({"a": {"b"}, "b": {"c"}, "d": {"a"}}, []),
    ],
)
def test_a_circle_is_found(graph: dict[str, set[str]], found: list[list[str]]) -> None:
    assert imports.cycles(graph) == found


def test_an_upward_import_is_found() -> None:
    """The check can fail: the same page with the report below the stages it reads."""
    text = PAGE.read_text()
    lines = text.split("```layers\n", 1)[1].split("```", 1)[0].splitlines()
    report = next(line for line in lines if line.startswith("report "))
    stages = next(line for line in lines if line.startswith("stages "))
    swapped = text.replace(report, "\0").replace(stages, report).replace("\0", stages)
    found = upward(layers(swapped))
    assert any("(stages) imports ci_onnx.report" in p or "(report) imports" in p for p in found), found[:3]
