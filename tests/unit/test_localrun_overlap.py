"""`onnx-gate run` makes the environments while the bundles export, each environment once."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from ci_onnx import config
from ci_onnx.contracts.errors import EnvironmentProblem
from ci_onnx.contracts.results import read_result
from ci_onnx.contracts.target import Status, Target
from ci_onnx.orchestration import localrun
from ci_onnx.runners import base, batch
from tests.conftest import EXAMPLE_CONFIG


class OneRelease:
    """A package index that offers the example's two releases (for every flavour)."""

    def versions(self, package: str, *, pre: bool = False) -> list[str]:
        return ["1.32.0", "1.20.1"]


def test_environments_are_made_while_the_bundles_export_and_each_only_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = config.load(EXAMPLE_CONFIG)
    started = threading.Event()
    made: list[str] = []
    seen_during_export: list[bool] = []

    def provision(target: Target, how: base.Provisioning) -> base.RunnerEnv:
        made.append(target.id)
        started.set()
        raise EnvironmentProblem("onnxruntime 1.32.0: no wheel for this platform")

    def export(*args: object) -> int:
        seen_during_export.append(started.wait(timeout=30))  # the export waits for nothing of it
        return 0

    monkeypatch.setattr(base, "provision", provision)
    monkeypatch.setattr(localrun, "_export", export)
    options = localrun.RunOptions(out=tmp_path / "out", cache_dir=tmp_path / "cache", jobs=8)
    summary = localrun.run(cfg, OneRelease(), options, lambda _line: None)
    assert seen_during_export == [True], "provisioning began before the export ended"
    runnable = summary.plan.runnable
    environments = {batch.environment_key(t) for t in runnable}
    assert len(batch.groups(runnable, options.jobs)) > len(environments), "groups split environments"
    assert len(made) == len(environments), "each environment made once, not once per group"
    for t in runnable:  # its trouble is every one of its targets' error, reported as such
        assert summary.statuses[t.id] is Status.ERROR
        r = read_result(options.out / "results" / f"{t.id}.json")
        assert "no wheel for this platform" in r.summary
