"""The reuse mutation suite (tests/reuse/mutations.py) on every layout: each mutation of an input an
export read exports it again, naming the input; each edit of a file no export read reuses it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.reuse import layouts, mutations

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("layout", layouts.every(), ids=lambda layout: layout.name)
def test_every_read_input_kills_and_every_unread_edit_reuses(layout: layouts.Layout, tmp_path: Path) -> None:
    outcome = mutations.run_layout(layout, tmp_path)
    assert outcome.missed == ()
    assert outcome.killed == outcome.read >= len(layout.read)
    assert outcome.reused == outcome.unread == len(layout.unread)
    named = [r for r in outcome.reasons if r.partition(":")[0] != layouts.BUMP]
    assert all(r.split(": ", 1)[1] in (f"{r.split(':')[0]} changed", "its key changed") for r in named), named
