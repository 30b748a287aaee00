"""The triage injection suite (tests/injection/triage_suite.py): every planted fault is named right,
class and node (or bracket), and the committed table says what a run says."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")

from tests.injection import triage_suite


def test_every_planted_fault_is_named_right_and_the_committed_table_is_current(tmp_path: Path) -> None:
    rows = triage_suite.run(triage_suite.CASES, tmp_path)
    wrong = [(r.case.kind, r.case.name, r.fault, r.summary) for r in rows if not r.right]
    assert not wrong, wrong
    assert {k for k, _ in triage_suite.shares(rows).items()} == {c.kind for c in triage_suite.CASES}
    committed = triage_suite.TABLE.read_text()
    assert committed == triage_suite.table(rows), (
        "regenerate: PYTHONPATH=. python tests/injection/triage_suite.py --table tests/injection/TRIAGE.md"
    )


def test_a_case_is_right_only_with_its_class_and_its_node() -> None:
    case = triage_suite.CASES[0]
    right = triage_suite.Row(case, case.fault, "/model/features/features.2/Max", "", 0.0)
    assert right.right
    assert not triage_suite.Row(case, "runtime", right.node, "", 0.0).right
    assert not triage_suite.Row(case, case.fault, "-", "", 0.0).right
