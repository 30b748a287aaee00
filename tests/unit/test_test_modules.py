"""The test tree itself: pytest imports test modules by basename (the test folders are not packages),
so two test files of the same name in different folders break the collection of the whole tier."""

from __future__ import annotations

import collections
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_no_two_test_modules_share_a_basename() -> None:
    found = collections.defaultdict(list)
    for path in TESTS.rglob("test_*.py"):
        if "__pycache__" not in path.parts:
            found[path.name].append(path.relative_to(TESTS).as_posix())
    assert len(found) > 50  # the tree is where this test thinks it is
    clashes = {name: paths for name, paths in found.items() if len(paths) > 1}
    assert clashes == {}, f"rename one of each pair: {clashes}"
