"""Every workflow and action the project ships or ``onnx-gate init`` writes lints clean, and keeps the
gate's rules: a report that always runs, least privilege, no expression spliced into a script."""

from __future__ import annotations

import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from ci_onnx import matrix
from ci_onnx.contracts import proc
from ci_onnx.orchestration import scaffold

ROOT = Path(__file__).resolve().parents[2]
SHIPPED_WORKFLOWS = sorted((ROOT / ".github/workflows").glob("*.yml"))
ACTIONS = [ROOT / "action.yml", ROOT / "slim/action.yml", ROOT / "runner/action.yml"]
ACTION_FILES = [*ACTIONS, ROOT / "Dockerfile"]


def _tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if not found:
        pytest.skip(f"{name} is not installed: pip install -e '.[dev]' brings it")
    return found


def _generated(tmp: Path) -> list[Path]:
    """The starter files for a published action and, in a repository holding this action, for ``./``
    (so that actionlint checks every ``with:`` against action.yml and runner/action.yml)."""
    for action_file in ACTION_FILES:
        target = tmp / action_file.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(action_file, target)
    proc.run(["git", "init", "-q", str(tmp)], timeout=60, check=True)
    paths = []
    for name, settings in (
        ("remote", scaffold.Settings()),
        ("local", scaffold.Settings(action="./")),
    ):
        for fork_safe in (False, True):
            for rel, content in scaffold.starter_files(settings, fork_safe=fork_safe).items():
                if rel.suffix == ".yml" and rel.parts[0] == ".github":
                    path = tmp / ".github/workflows" / f"{name}-{'fork-' if fork_safe else ''}{rel.name}"
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(content)
                    paths.append(path)
    return paths


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return _generated(tmp_path_factory.mktemp("repo"))


def _load(path: Path) -> dict[str, Any]:
    data = YAML(typ="safe").load(path.read_text())
    assert isinstance(data, dict)
    return data


def _all_workflows(generated: list[Path]) -> list[Path]:
    return [*SHIPPED_WORKFLOWS, *generated]


def test_the_project_ships_ci_and_a_self_test() -> None:
    assert {p.name for p in SHIPPED_WORKFLOWS} >= {"ci.yml", "self-test.yml"}


def test_the_self_test_is_the_rendered_starter_gate() -> None:
    assert (ROOT / scaffold.SELF_TEST).read_text() == scaffold.self_test_workflow(), (
        "regenerate with: python -m ci_onnx.orchestration.scaffold"
    )
    text = scaffold.self_test_workflow()
    # The pull request's own code: every job through the composite action from the checkout, never
    # a container action, whose image holds the last release (ci.yml tests the images).
    assert "uses: ./runner\n" in text and "uses: ./\n" not in text and "uses: ./slim" not in text


def test_workflows_pass_the_github_workflow_schema(generated: list[Path]) -> None:
    done = proc.run(
        [
            _tool("check-jsonschema"),
            "--builtin-schema",
            "vendor.github-workflows",
            *_all_workflows(generated),
        ],
        timeout=120,
    )
    assert done.ok, done.stdout + done.stderr


def test_dependabot_config_passes_its_schema_and_covers_actions_docker_and_pip() -> None:
    path = ROOT / ".github/dependabot.yml"
    done = proc.run([_tool("check-jsonschema"), "--builtin-schema", "vendor.dependabot", path], timeout=120)
    assert done.ok, done.stdout + done.stderr
    updates = {u["package-ecosystem"]: u for u in _load(path)["updates"]}
    assert set(updates) == {"github-actions", "docker", "pip"}
    assert set(updates["github-actions"]["directories"]) == {"/", "/runner"}  # workflows, the composite
    assert updates["docker"]["directory"] == "/" and (ROOT / "Dockerfile").is_file()
    assert updates["pip"]["directory"] == "/docker" and list((ROOT / "docker").glob("requirements-*.txt"))


def test_actions_pass_the_github_action_schema() -> None:
    done = proc.run(
        [_tool("check-jsonschema"), "--builtin-schema", "vendor.github-actions", *ACTIONS], timeout=120
    )
    assert done.ok, done.stdout + done.stderr


def test_shipped_workflows_pass_actionlint() -> None:
    done = proc.run([_tool("actionlint"), "-no-color", *SHIPPED_WORKFLOWS], timeout=120, cwd=ROOT)
    assert done.ok, done.stdout + done.stderr


def test_generated_workflows_pass_actionlint(generated: list[Path]) -> None:
    repo = generated[0].parents[2]
    done = proc.run([_tool("actionlint"), "-no-color", *generated], timeout=120, cwd=repo)
    assert done.ok, done.stdout + done.stderr


def test_actionlint_would_catch_an_unknown_input(tmp_path: Path) -> None:
    """Guards the test above: a ``with:`` key that action.yml lacks must make actionlint fail."""
    paths = _generated(tmp_path)
    local = next(p for p in paths if p.name == "local-onnx-gate.yml")
    local.write_text(
        local.read_text().replace("command: plan", "command: plan\n          no-such-input: x", 1)
    )
    done = proc.run([_tool("actionlint"), "-no-color", local], timeout=120, cwd=tmp_path)
    assert not done.ok and "no-such-input" in done.stdout


def _jobs(generated: list[Path]) -> Iterator[tuple[Path, str, dict[str, Any]]]:
    for path in _all_workflows(generated):
        for name, job in _load(path)["jobs"].items():
            yield path, name, job


def test_least_privilege_everywhere(generated: list[Path]) -> None:
    for path in _all_workflows(generated):
        assert _load(path)["permissions"] == {}, f"{path.name}: the workflow grants nothing by default"
    for path, name, job in _jobs(generated):
        assert "permissions" in job, f"{path.name}: job {name} states its permissions"
        writes = {k for k, v in job["permissions"].items() if v == "write"}
        if name == "nightly":
            assert writes == {"issues"}, (
                f"{path.name}: the nightly job writes tracking issues and nothing else"
            )
        elif path.name == "release.yml" and name == "images":
            assert writes == {"packages"}, f"{path.name}: the images job pushes images and nothing else"
        elif path.name == "release.yml" and name == "release":
            assert writes == {"contents"}, (
                f"{path.name}: the release job moves tags and writes the release only"
            )
        elif path.name == "docs.yml" and name == "deploy":
            assert writes == {"pages", "id-token"}, (
                f"{path.name}: the deploy job writes the Pages site (with its OIDC token) only"
            )
        elif name != "report" and name != "comment":
            assert not writes, f"{path.name}: job {name} needs no write access"


def test_matrices_do_not_fail_fast(generated: list[Path]) -> None:
    for path, name, job in _jobs(generated):
        if "strategy" in job:
            assert job["strategy"]["fail-fast"] is False, f"{path.name}: job {name}"


def test_the_report_always_runs_and_needs_every_gate_job(generated: list[Path]) -> None:
    for path in _all_workflows(generated):
        jobs = _load(path)["jobs"]
        if "report" not in jobs:
            continue
        report = jobs["report"]
        assert report["if"] == "always()", path.name
        verify_jobs = {
            job.job_id(n)
            for job in matrix.jobs().values()
            if not job.optional
            for n in range(1, job.matrices + 1)
        }
        assert set(report["needs"]) == {"plan", "export", *verify_jobs}, path.name
        assert {"verify", "verify-2", "verify-4", "verify-runner", "verify-node", "verify-web"} <= verify_jobs
        last = report["steps"][-1]
        assert "failure" in last["if"] and "cancelled" in last["if"] and "exit 1" in last["run"], path.name


def test_artifact_names_are_unique_per_matrix_cell(generated: list[Path]) -> None:
    for path, name, job in _jobs(generated):
        if "strategy" not in job or "matrix" not in str(job["strategy"]):
            continue
        for step in job["steps"]:
            if str(step.get("uses", "")).startswith("actions/upload-artifact"):
                artifact = step["with"]["name"]
                assert "${{ matrix." in artifact, (
                    f"{path.name}: job {name} uploads {artifact!r} from every cell"
                )


def test_pull_requests_share_a_concurrency_group(generated: list[Path]) -> None:
    for path in _all_workflows(generated):
        data: dict[Any, Any] = _load(path)
        triggers = data.get(True) or data.get("on") or {}  # a YAML 1.1 reader makes `on` True
        if "pull_request" in triggers:
            assert "github.event.pull_request.number" in data["concurrency"]["group"], path.name


_EXPRESSION = re.compile(r"\$\{\{")


def test_no_expression_is_spliced_into_a_script(generated: list[Path]) -> None:
    """Values reach scripts through env:, never through ${{ }} inside run: (script injection)."""
    steps = [(p.name, s) for p, _, job in _jobs(generated) for s in job.get("steps", [])]
    steps += [("runner/action.yml", s) for s in _load(ROOT / "runner/action.yml")["runs"]["steps"]]
    for where, step in steps:
        if "run" in step:
            assert not _EXPRESSION.search(step["run"]), f"{where}: {step['run'][:60]!r}"


def _uses(generated: list[Path], action: str) -> Iterator[tuple[Path, str, dict[str, Any]]]:
    for path, name, job in _jobs(generated):
        for step in job.get("steps", []):
            if str(step.get("uses", "")).startswith(f"{action}@"):
                yield path, name, step


def test_every_upload_overwrites_so_a_rerun_job_can_upload_again(generated: list[Path]) -> None:
    """upload-artifact v4+ answers 409 to a second upload of a name in one run, and a re-run job is
    in the same run: without overwrite the re-run fails, and its results never replace the old ones."""
    uploads = list(_uses(generated, "actions/upload-artifact"))
    assert len(uploads) > 10
    for path, name, step in uploads:
        assert step["with"].get("overwrite") is True, (
            f"{path.name}: job {name} uploads without overwrite: true"
        )


def test_node_and_web_jobs_ask_for_a_node_the_runner_image_caches(generated: list[Path]) -> None:
    """Node 20 is past its end of life and not in ubuntu-24.04's tool cache (22 and 24 are)."""
    seen = [(path, name, step) for path, name, step in _uses(generated, "actions/setup-node")]
    assert {name for _, name, _ in seen} == {"verify-node", "verify-web"}
    for path, name, step in seen:
        assert str(step["with"]["node-version"]) in ("22", "24"), f"{path.name}: job {name}"
