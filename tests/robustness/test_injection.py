"""Fork text reaches the trusted comment only as text: every payload of tests/robustness/injection.py
in every field a result or a JUnit file carries, through `onnx-gate report` as a CI step runs it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.robustness import injection

CASES = injection.cases()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_payload_renders_as_text(case: injection.Case, tmp_path: Path) -> None:
    out = injection.render_case(case, tmp_path)
    assert not out["traceback"], out["stdout"][-3000:]
    assert out["report.md"], out["stdout"][-3000:]
    assert injection.rendered(out) == [], out["stdout"][-2000:]
    if case.field.startswith("target-"):  # a target part outside the id's grammar: the file is unreadable
        assert "Unreadable results" in out["report.md"]
