"""`onnx-gate run --baseline-ref`: two commits of a model, the base run in a temporary worktree with the
same plan, then the head judged against it, on real exports and the real onnxruntime.

The base commit is healthy but for two cells: ``op17-dynamo`` fails its opset check (dynamo cannot
take the ReduceMean of a ``mean`` down to opset 17: the file stays at 18) and the int8-dynamic cell
misses a tolerance tighter than int8 can hold. The head fixes the first (a sum instead of a mean),
keeps the second (a known failure), adds a branch only the TorchScript tracer takes (a new failure
of ``op17-torchscript``: the export's own check against torch catches it) and doubles the
convolutions: a model doing more work in every cell, each timed beside its base bundle in one
process.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ci_onnx.cli import cli
from tests.act.harness import git, make_repo

pytestmark = pytest.mark.e2e

RUNTIME = "1.32.0"
MODEL = """\
import torch
from torch import nn

BLOCKS = {blocks}


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 32, 3, padding=1)
        self.body = nn.Sequential(*[nn.Sequential(nn.Conv2d(32, 32, 3, padding=1), nn.ReLU()) for _ in range(BLOCKS)])
        self.head = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.body(torch.relu(self.stem(x)))
{pool}
        logits = self.head(y)
{traced}
        return logits


def build() -> nn.Module:
    torch.manual_seed(0)
    return Net()
"""
BASE_POOL = "        y = y.mean(dim=(2, 3))  # ReduceMean: dynamo cannot write it at opset 17"
HEAD_POOL = "        y = y.sum(dim=(2, 3)) * (1.0 / 256)"
TRACED = "        if torch.jit.is_tracing():  # a path only the TorchScript tracer takes\n            logits = logits + 1.0"
CONFIG = f"""\
version: 1
model:
  name: convnet
  factory: model.py:build
  inputs: {{x: {{shape: [batch, 3, 16, 16]}}}}
  outputs: [logits]
  dynamic_axes: {{x: {{0: batch}}, logits: {{0: batch}}}}
export: {{opsets: [17, 18], exporters: [dynamo, torchscript], precisions: [fp32, int8-dynamic]}}
verify:
  random_inputs: 4
  batch_sizes: [1, 8]
  precision_tolerance: {{int8-dynamic: {{atol: 1.0e-4, rtol: 1.0e-3}}}}
targets:
  runtimes: ["{RUNTIME}"]
  providers: [cpu]
  exclude:
    - {{precision: int8-dynamic, opset: "17"}}
    - {{precision: int8-dynamic, exporter: torchscript}}
    - {{exporter: torchscript, opset: "18"}}
"""
FIXED = f"ort{RUNTIME}-cpu-op17-dynamo"
MORE_WORK = f"ort{RUNTIME}-cpu-op18-dynamo"
NEW_FAILURE = f"ort{RUNTIME}-cpu-op17-torchscript"
KNOWN = f"ort{RUNTIME}-cpu-op18-dynamo-int8-dynamic"


def two_commits(repo: Path) -> tuple[str, str]:
    base = make_repo(
        repo, {"model.py": MODEL.format(blocks=2, pool=BASE_POOL, traced=""), "onnx-gate.yml": CONFIG}
    )
    (repo / "model.py").write_text(MODEL.format(blocks=4, pool=HEAD_POOL, traced=TRACED))
    git(repo, "commit", "-q", "-am", "the head: a sum, a traced-only branch, twice the convolutions")
    return base, git(repo, "rev-parse", "HEAD")


def statuses(out: Path) -> dict[str, str]:
    return {p.stem: json.loads(p.read_text())["status"] for p in sorted((out / "results").glob("*.json"))}


def test_the_head_is_judged_against_its_base_commit_run_in_a_worktree(
    tmp_path: Path, env_cache: Path
) -> None:
    repo = tmp_path / "repo"
    base_sha, head_sha = two_commits(repo)
    out = tmp_path / "out"
    args = ["run", "--config", str(repo / "onnx-gate.yml"), "--out", str(out), "--cache-dir", str(env_cache)]
    result = CliRunner().invoke(cli, [*args, "--baseline-ref", "HEAD~1"])
    log = result.output
    (tmp_path / "run.log").write_text(log)
    assert statuses(out / "baseline") == {
        FIXED: "failed",
        MORE_WORK: "passed",
        NEW_FAILURE: "passed",
        KNOWN: "failed",
    }, log[-4000:]
    assert statuses(out) == {FIXED: "passed", MORE_WORK: "passed", NEW_FAILURE: "failed", KNOWN: "failed"}, (
        log[-4000:]
    )
    assert json.loads((out / "baseline" / "baseline.json").read_text())["commit"] == base_sha
    assert json.loads((out / "baseline.json").read_text())["commit"] == head_sha
    assert result.exit_code == 1, log[-4000:]
    assert f"compared with `{base_sha[:7]}` (--baseline-ref HEAD~1, run in a temporary worktree)" in log
    report = (out / "report.md").read_text()
    head_line = report.splitlines()[0]
    # every cell serves the bigger model, so each one that was timed on both sides regressed
    assert head_line == "## ❌ onnx-gate: 4 regressions, 1 fixed, 0 unchanged (1 known failure)", head_line
    regressions = report.split("### Regressions against the base")[1].split("###")[0]
    assert f"| `{NEW_FAILURE}` | `reference-parity` | passed | failed |" in regressions
    for cell in (MORE_WORK, FIXED, KNOWN):
        assert f"| `{cell}` | `p50 latency, batch 8` |" in regressions, regressions
    assert (
        "side by side; Wilcoxon signed-rank" in regressions
        and "against the base's stored figures" not in regressions
    )
    assert f"✅ fixed: `{FIXED}`" in report
    known = report.split("known or expected failure(s), not blocking</summary>")[1]
    assert f"`{KNOWN}`" in known and "known: it fails the same checks on the base" in known
    results = json.loads((out / "results" / f"{MORE_WORK}.json").read_text())
    assert (
        results["observation"]["paired"]["base_bundle"]
        == json.loads((out / "baseline" / "results" / f"{MORE_WORK}.json").read_text())["bundle"]
    )
    assert "onnx-gate-base-" not in git(repo, "worktree", "list"), "the temporary worktree is gone"


SMALL = (
    CONFIG.split("export:", 1)[0].replace("{", "{{").replace("}", "}}")
    + """export: {{opsets: [18], exporters: [torchscript]}}
verify: {{random_inputs: 4, batch_sizes: [1], latency_runs: 3}}
targets: {{runtimes: ["{runtime}"], providers: [cpu]}}
{ledger}"""
)
"""The head of CONFIG (the model) with a matrix of one cell, as a format string."""
CATCH_ALL = 'expected_failures:\n  - {select: "*", check: "*", reason: "flaky", until: "2099-12-31"}\n'


def test_a_commit_that_breaks_the_model_and_adds_a_catch_all_ledger_entry_is_blocked(
    tmp_path: Path, env_cache: Path
) -> None:
    """The head writes its own policy: a catch-all ledger entry beside the break. The base's policy
    judges it: the entry is a policy change named in the report, it covers nothing, and run exits 1."""
    repo = tmp_path / "repo"
    make_repo(
        repo,
        {
            "model.py": MODEL.format(blocks=1, pool=HEAD_POOL, traced=""),
            "onnx-gate.yml": SMALL.format(runtime=RUNTIME, ledger=""),
        },
    )
    (repo / "model.py").write_text(MODEL.format(blocks=1, pool=HEAD_POOL, traced=TRACED))
    (repo / "onnx-gate.yml").write_text(SMALL.format(runtime=RUNTIME, ledger=CATCH_ALL))
    git(repo, "commit", "-q", "-am", "break the traced path, and call every failure known")
    out = tmp_path / "out"
    args = ["run", "--config", str(repo / "onnx-gate.yml"), "--out", str(out), "--cache-dir", str(env_cache)]
    result = CliRunner().invoke(cli, [*args, "--baseline-ref", "HEAD~1"])
    (tmp_path / "run.log").write_text(result.output)
    assert result.exit_code == 1, result.output[-4000:]
    report = (out / "report.md").read_text()
    policy = report.split("### Policy changes in this pull request")[1].split("###")[0]
    assert "expected_failures[0] (select '*', check '*', until 2099-12-31) added" in policy, policy
    assert "(loosens: applies once merged)" in policy
    assert "judged by the policy of the base's" in report
