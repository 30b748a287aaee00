"""What the generated workflows get from the plan: a verify job for every matrix the plan writes, and
the config's verify settings, so a verify job needs no checkout."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from ci_onnx import matrix
from ci_onnx import plan as planning
from ci_onnx.contracts.errors import ConfigError
from ci_onnx.contracts.target import Target
from ci_onnx.contracts.verify_options import VerifyOptions, options_from
from ci_onnx.orchestration import scaffold
from ci_onnx.plan import cijobs
from ci_onnx.verify import stage


def _plan(n: int, max_cells_per_job: int = 0, **verify: object) -> planning.Plan:
    targets = tuple(
        Target(runtime=f"1.{i // 20}.0", provider="cpu", opset=7 + i % 20, exporter="dynamo")
        for i in range(n)
    )
    options = dataclasses.replace(VerifyOptions(), **verify)
    return planning.Plan(
        1, "onnx-gate.yml", "m", targets, options, cijobs.CiSettings(max_cells_per_job=max_cells_per_job)
    )


def test_every_container_matrix_is_written_and_each_has_a_verify_job() -> None:
    grouped = cijobs.github_outputs(_plan(600))  # 30 releases × 20 opsets: one job per release
    assert len(json.loads(grouped["matrix"])["include"]) == 30 and grouped["container-targets-2"] == "0"
    out = cijobs.github_outputs(_plan(600, max_cells_per_job=1))
    sizes = [len(json.loads(out["matrix" if n == 1 else f"matrix-{n}"])["include"]) for n in range(1, 5)]
    assert sizes == [256, 256, 88, 0]
    assert [out["container-targets"], out["container-targets-2"], out["container-targets-4"]] == [
        "600",
        "256",
        "0",
    ]
    jobs = _load_text(scaffold.workflow("pr-gate.yml.j2", scaffold.Settings()))["jobs"]
    for n in range(1, matrix.jobs()["container"].matrices + 1):
        suffix = "" if n == 1 else f"-{n}"
        job = jobs[f"verify{suffix}"]
        assert job["strategy"]["matrix"] == f"${{{{ fromJSON(needs.plan.outputs.matrix{suffix}) }}}}"
        assert f"container-targets{suffix} != '0'" in job["if"]
        assert f"matrix{suffix}" in jobs["plan"]["outputs"]


def test_a_plan_past_what_the_workflow_holds_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"at most 1024 container jobs; raise ci\.max_cells_per_job"):
        cijobs.github_outputs(_plan(4 * 256 + 1, max_cells_per_job=1))


def test_verify_jobs_run_after_a_failed_export_and_upload_its_bundle() -> None:
    jobs = _load_text(scaffold.workflow("pr-gate.yml.j2", scaffold.Settings()))["jobs"]
    upload = next(s for s in jobs["export"]["steps"] if "upload-artifact" in s.get("uses", ""))
    assert upload["if"] == "always()"
    assert jobs["verify"]["if"].startswith("always() && needs.plan.result == 'success'")
    verify_step = next(s for s in jobs["verify"]["steps"] if s.get("with", {}).get("command") == "verify")
    assert verify_step["with"]["plan"] == "onnx-gate-out/plan.json"
    assert not any("checkout" in s.get("uses", "") for s in jobs["verify"]["steps"])


def test_verify_settings_travel_in_the_plan() -> None:
    plan = _plan(3, max_cpu_time_share=1.0, latency_runs=3, timeout_s=42.0)

    decoded = _round_trip(plan)
    target, options = stage.settings(plan.targets[0].id, None, decoded)
    assert options == plan.verify and target == plan.targets[0]
    _, overridden = stage.settings(plan.targets[0].id, None, decoded, timeout_s=5)
    assert overridden.timeout_s == 5 and overridden.latency_runs == 3
    _, defaults = stage.settings(plan.targets[0].id, None, None)
    assert defaults == options_from(None)


def _round_trip(plan: planning.Plan) -> planning.Plan:
    from ci_onnx.contracts import serde

    return serde.from_json(planning.Plan, json.loads(planning.to_json(plan)))


def _load_text(text: str) -> Any:
    return YAML(typ="safe").load(text)


def test_readme_init_and_the_report_name_one_check_to_require(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from ci_onnx.cli import cli
    from ci_onnx.report import CHECK_NAME
    from tests.conftest import REPO

    said = CliRunner().invoke(cli, ["init", str(tmp_path)]).output
    assert f"the check '{CHECK_NAME}' required" in said
    readme = (REPO / "README.md").read_text()
    assert f"require the check **`{CHECK_NAME}`**" in readme
    assert "/ report" not in readme
    for fork_safe in (False, True):
        for path, text in scaffold.starter_files(scaffold.Settings(), fork_safe=fork_safe).items():
            assert "/ report" not in text, path
            if "required" in text:
                assert f'"{CHECK_NAME}" required' in text or f'"{CHECK_NAME}" the required' in text, path


def test_every_third_party_action_is_pinned_to_a_commit_with_its_tag(tmp_path: Path) -> None:
    from tests.conftest import REPO

    texts = [(REPO / "runner" / "action.yml").read_text()]
    for fork_safe in (False, True):
        texts += scaffold.starter_files(scaffold.Settings(), fork_safe=fork_safe).values()
    seen = 0
    for text in texts:
        for line in re.findall(r"uses: (\S.*)", text):
            if line.startswith(("./", "onnx-gate/onnx-gate")):
                continue  # onnx-gate itself: the version the user chose with --action
            seen += 1
            assert re.fullmatch(r"[\w-]+/[\w-]+@[0-9a-f]{40} # v\d+\.\d+\.\d+", line), line
    assert seen > 10


def test_only_the_steps_that_post_get_a_token() -> None:
    from tests.conftest import REPO

    for path in ("action.yml", "runner/action.yml"):
        spec = YAML(typ="safe").load((REPO / path).read_text())
        assert spec["inputs"]["github-token"]["default"] == "", f"{path}: no token unless a step passes one"
    posting = reading = 0
    for fork_safe in (False, True):
        for name, text in scaffold.starter_files(scaffold.Settings(), fork_safe=fork_safe).items():
            if name.suffix != ".yml" or "workflows" not in str(name):
                continue
            for job in _load_text(text)["jobs"].values():
                for step in job["steps"]:
                    given = step.get("with", {})
                    if not str(step.get("uses", "")).startswith("onnx-gate/"):
                        continue
                    token = str(given.get("github-token", ""))
                    if given["command"] in ("report", "nightly") and token:
                        posting += 1
                        assert token == "${{ github.token }}"
                    elif given["command"] in ("verify", "plan") and token:  # reads the base's run, PRs only
                        reading += 1
                        assert token == "${{ github.event_name == 'pull_request' && github.token || '' }}"
                        assert (
                            given["baseline"]
                            == "${{ github.event_name == 'pull_request' && 'github' || '' }}"
                        )
                        assert job["permissions"] == {"contents": "read", "actions": "read"}
                    else:
                        assert not token, f"{name}: {given['command']} gets a token"
    assert posting == 4  # the PR gate's report, the nightly twice, the trusted comment job
    # the PR gate's verify jobs of a job declaring `baseline` (the container job: verify … verify-4;
    # the runner process never sees the token), and its plan (which reads the base's plan and
    # results: a model unchanged since is not run again)
    assert reading == sum(j.matrices for j in matrix.jobs().values() if j.baseline) + 1 == 5


def test_fork_text_in_results_cannot_start_a_workflow_command(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from ci_onnx.cli import cli
    from ci_onnx.contracts.results import RESULT_SCHEMA_VERSION, CheckResult, TargetResult, write_result
    from ci_onnx.contracts.target import Status, Target

    target = Target("1.32.0", "cpu", 17, "dynamo")
    forged = "x\n::set-output name=verdict::pass\n::error::all good"
    result = TargetResult(
        RESULT_SCHEMA_VERSION,
        target,
        Status.FAILED,
        forged,
        checks=(CheckResult("load\n::warning::x", Status.FAILED, forged),),
    )
    write_result(tmp_path / "results", result)
    env = {"GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": str(tmp_path / "out.txt"), "GITHUB_TOKEN": ""}
    done = CliRunner(env=env).invoke(
        cli, ["report", "--results", str(tmp_path), "--out", str(tmp_path / "o")]
    )
    assert done.exit_code == 1, done.output
    commands = [line for line in done.output.splitlines() if line.lstrip().startswith("::")]
    assert commands and all(c.startswith(("::error ", "::warning ")) for c in commands), commands
    assert not any("set-output" in c.split("::")[1] for c in commands)
