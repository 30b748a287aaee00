"""The release's last step (scripts/release.py) and the shape of release.yml: what a user's `@v1`
needs, in that order (images, an anonymous pull of both, then the tags and the notes)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

import ci_onnx
from ci_onnx.github.client import Client
from ci_onnx.orchestration import scaffold
from scripts import release
from tests.fakegithub import server as fake

ROOT = Path(__file__).resolve().parents[2]
SHA1, SHA2 = "1" * 40, "2" * 40
CHANGELOG = """# Changelog

## [1.2.0] - 2027-01-10

- the second minor

## 1.1.3

- a fix

## [1.0.0]
"""


def test_the_moving_tags_are_the_major_and_the_minor() -> None:
    assert release.moving_tags("1.2.3") == ("v1", "v1.2")
    assert release.moving_tags("10.0.0") == ("v10", "v10.0")
    for version in ("1.2", "1.2.0rc1", "v1.2.3"):
        with pytest.raises(release.ReleaseError, match="not a final release"):
            release.moving_tags(version)


def test_the_notes_are_the_versions_section_without_its_heading() -> None:
    assert release.notes(CHANGELOG, "1.2.0") == "- the second minor\n"
    assert release.notes(CHANGELOG, "1.1.3") == "- a fix\n"
    with pytest.raises(
        release.ReleaseError, match=r"no section '## \[1.3.0\]' \(it has: 1.2.0, 1.1.3, 1.0.0\)"
    ):
        release.notes(CHANGELOG, "1.3.0")
    with pytest.raises(release.ReleaseError, match=r"the section for 1\.0\.0 is empty"):
        release.notes(CHANGELOG, "1.0.0")


def test_this_versions_notes_exist_and_init_names_the_tag_this_release_moves() -> None:
    assert release.notes((ROOT / "CHANGELOG.md").read_text(), ci_onnx.__version__)
    major, _ = release.moving_tags(ci_onnx.__version__)
    assert f"onnx-gate/onnx-gate@{major}" == scaffold.DEFAULT_ACTION, (
        "onnx-gate init writes a ref that this version's release does not create"
    )


def _client(github: fake.FakeGitHub) -> Client:
    return Client(fake.TOKEN, github.url)


def test_a_first_release_creates_the_tags_a_rerun_changes_nothing_the_next_moves_them() -> None:
    with fake.running() as github:
        client = _client(github)
        assert release.move_tag(client, github.repo, "v1", SHA1) == f"v1: created at {SHA1}"
        assert release.move_tag(client, github.repo, "v1", SHA1) == f"v1: already at {SHA1}"
        assert release.move_tag(client, github.repo, "v1", SHA2) == f"v1: moved from {SHA1} to {SHA2}"
        first = release.publish_release(client, github.repo, "1.0.0", "notes one\n")
        again = release.publish_release(client, github.repo, "1.0.0", "notes two\n")
    assert not github.state.violations, github.state.violations
    assert github.state.refs == {"tags/v1": SHA2}
    assert first.startswith("release v1.0.0: created") and again.startswith("release v1.0.0: notes rewritten")
    (made,) = github.state.releases.values()
    assert made["tag_name"] == "v1.0.0" and made["body"] == "notes two\n"


def test_the_script_stops_before_anything_moves_without_notes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    changelog = tmp_path / "CHANGELOG.md"
    changelog.write_text(CHANGELOG)
    with fake.running() as github:
        monkeypatch.setenv("GITHUB_TOKEN", fake.TOKEN)
        monkeypatch.setenv("GITHUB_REPOSITORY", github.repo)
        monkeypatch.setenv("GITHUB_API_URL", github.url)
        assert release.main(["--version", "1.3.0", "--sha", SHA1, "--changelog", str(changelog)]) == 1
        assert not github.state.requests
        assert release.main(["--version", "1.2.0", "--sha", SHA1, "--changelog", str(changelog)]) == 0
    assert "::error title=release::CHANGELOG.md has no section '## [1.3.0]'" in capsys.readouterr().out
    assert github.state.refs == {"tags/v1": SHA1, "tags/v1.2": SHA1}
    assert release.main(["--check", "--version", "1.2.0", "--changelog", str(changelog)]) == 0


def _workflow() -> dict[str, Any]:
    data = YAML(typ="safe").load((ROOT / ".github/workflows/release.yml").read_text())
    assert isinstance(data, dict)
    return data


def test_release_yml_pushes_then_pulls_anonymously_then_moves_the_tags() -> None:
    wf = _workflow()
    on = wf.get(True, wf.get("on"))
    assert on == {"push": {"tags": ["v[0-9]+.[0-9]+.[0-9]+"]}}, "only a full version tag releases (never v1)"
    jobs = wf["jobs"]
    assert list(jobs) == ["images", "public", "release"]
    assert jobs["public"]["needs"] == "images" and jobs["release"]["needs"] == ["images", "public"]
    assert jobs["images"]["permissions"] == {"contents": "read", "packages": "write"}
    assert jobs["public"]["permissions"] == {}, "the pull must hold no token"
    assert jobs["release"]["permissions"] == {"contents": "write"}
    pull = "\n".join(s.get("run", "") for s in jobs["public"]["steps"])
    assert 'export DOCKER_CONFIG="$RUNNER_TEMP/anonymous-docker"' in pull and "login" not in pull
    assert 'exit "$failed"' in pull and "::error" in pull
    build = "\n".join(s.get("run", "") for s in jobs["images"]["steps"])
    for arg in ("SOURCE", "VERSION", "REVISION"):
        assert f'--build-arg "{arg}=${arg}"' in build
    images = {wf["env"]["IMAGE_FULL"], wf["env"]["IMAGE_VERIFY"]}
    pulled = {
        YAML(typ="safe").load((ROOT / p).read_text())["runs"]["image"]
        for p in ("action.yml", "slim/action.yml")
    }
    assert {f"docker://{i}:{ci_onnx.__version__}" for i in images} == pulled
