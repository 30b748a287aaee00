"""The two commands of the README: what each sets up, and how the test command runs its tiers."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO

CALL = re.compile(r"(?:^|[\s;&|(])(?:\./)?(scripts/[\w-]+|\.ci/run)\b")


def _reach(script: str) -> set[str]:
    """The scripts ``script`` runs, and those they run, from their commands (comments aside)."""
    seen: set[str] = set()
    todo = [script]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for line in (REPO / name).read_text().splitlines():
            code = line.split("#", 1)[0]
            todo += [m for m in CALL.findall(code) if (REPO / m).is_file()]
    return seen


def _commands(scripts: set[str]) -> str:
    return "\n".join(
        line.split("#", 1)[0] for s in sorted(scripts) for line in (REPO / s).read_text().splitlines()
    )


def test_the_demo_installs_no_browser_and_the_test_command_does() -> None:
    """scripts/demo ran the web set-up (apt-get chromium, root, ~350 MB) for a kind it does not use."""
    demo = _reach("scripts/demo")
    assert "scripts/setup" in demo and "scripts/setup-web" not in demo, demo
    assert "apt-get" not in _commands(demo)
    assert "scripts/setup-web" in _reach("scripts/test") and "scripts/test" in _reach(".ci/run")


def _tiers(
    tmp_path: Path, codes: list[int], *args: str, env: dict[str, str] | None = None
) -> tuple[int, list[str], str]:
    """scripts/tiers with a stand-in python whose pytest runs exit with ``codes`` in turn."""
    bin_dir, calls, queue = tmp_path / "bin", tmp_path / "calls", tmp_path / "codes"
    bin_dir.mkdir()
    queue.write_text("\n".join(map(str, codes)) + "\n")
    python = bin_dir / "python"
    python.write_text(
        f'#!/bin/sh\necho "$*" >> {calls}\ncode=$(head -n 1 {queue}); sed -i 1d {queue}\n'
        'sleep "${STUB_SECONDS:-0}"\nexit "$code"\n'
    )
    python.chmod(0o755)
    done = subprocess.run(
        [str(REPO / "scripts" / "tiers"), *args],
        env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    ran = calls.read_text().splitlines() if calls.is_file() else []
    return done.returncode, ran, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("codes", "exit_code", "runs"),
    [
        ([0, 0], 0, 2),  # both tiers, the fast one first
        ([2, 0], 130, 1),  # Ctrl-C in the fast tier: the end-to-end tier never starts
        ([0, 2], 130, 2),
        ([1, 0], 1, 1),  # a failing fast tier stops the run before the slow one
        ([5, 0], 1, 1),  # no tests collected is a failure
    ],
)
def test_the_tiers_run_in_order_and_stop_on_an_interrupt_or_a_fast_failure(
    tmp_path: Path, codes: list[int], exit_code: int, runs: int
) -> None:
    code, ran, _ = _tiers(tmp_path, codes)
    assert code == exit_code
    assert len(ran) == runs
    assert ran[0].startswith("-m pytest -m not e2e")
    if runs == 2:
        assert ran[1].startswith("-m pytest -m e2e")


def test_arguments_make_one_pytest_run(tmp_path: Path) -> None:
    code, ran, _ = _tiers(tmp_path, [0], "-m", "not e2e", "-x")
    assert code == 0 and ran == ["-m pytest -m not e2e -x"]


def test_the_log_warns_past_four_fifths_of_the_test_budget(tmp_path: Path) -> None:
    (tmp_path / "tight").mkdir()
    code, _, said = _tiers(
        tmp_path / "tight", [0, 0], env={"ONNX_GATE_TEST_BUDGET_S": "2", "STUB_SECONDS": "1"}
    )
    assert code == 0 and "::warning title=test budget::" in said, said
    (tmp_path / "roomy").mkdir()
    code, _, said = _tiers(tmp_path / "roomy", [0, 0], env={"ONNX_GATE_TEST_BUDGET_S": "2700"})
    assert code == 0 and "::warning" not in said and "s of a 2700 s budget" in said, said
