"""A preset that sets state of the whole process (flush-to-zero) never shares a runner process:
onnxruntime sets it on the thread that creates the first session and keeps it there, so a batch
child's first cell would decide it for every cell after (a run and a verify would then disagree)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ci_onnx.contracts import proc
from ci_onnx.contracts.target import Target
from ci_onnx.contracts.verify_options import VerifyOptions
from ci_onnx.runners import base, batch, python, session


def test_only_a_preset_with_a_process_wide_setting_is_process_wide() -> None:
    assert session.process_wide("ftz", {})
    assert not session.process_wide("default", {})
    assert not session.process_wide("no_opt", {})
    assert session.process_wide("mine", {"mine": {"denormal_as_zero": False, "intra_op_threads": 1}})


def test_a_flush_to_zero_cell_runs_alone_and_the_rest_share_a_child(monkeypatch: pytest.MonkeyPatch) -> None:
    batched: list[list[str]] = []
    alone: list[str] = []

    def run_jobs(program: Any, jobs: Any, **kw: Any) -> list[proc.Completed]:
        batched.append([j.label for j in jobs])
        done = [proc.Completed((j.label,), 0, "", "", 0.1) for j in jobs]
        for i, d in enumerate(done):
            kw["on_done"](i, d)
        return done

    def launch(self: Any, env: Any, x: base.Launch, **kw: Any) -> proc.Completed:
        alone.append(x.target.id)
        return proc.Completed((f"{x.target.id} runner",), 0, "", "", 0.1)

    monkeypatch.setattr(batch, "run_jobs", run_jobs)
    monkeypatch.setattr(python.PythonRunner, "launch", launch)
    cells = [Target("1.32.0", "cpu", 18, "dynamo", session_options=s) for s in ("default", "ftz", "no_opt")]
    launches = [base.Launch(Path("b"), t, Path("o"), VerifyOptions(), "CPUExecutionProvider") for t in cells]
    env = base.RunnerEnv("python", "1.32.0", Path("env"), "python")
    heard: dict[int, str] = {}
    got = python.RUNNER.launch_many(
        env, launches, base_env={}, on_done=lambda i, d: heard.update({i: d.args[0]})
    )
    assert alone == [cells[1].id]
    assert batched == [[f"{cells[0].id} runner", f"{cells[2].id} runner"]]
    assert [d.args[0] for d in got] == [f"{c.id} runner" for c in cells]  # in the launches' order
    assert heard == {i: f"{c.id} runner" for i, c in enumerate(cells)}
