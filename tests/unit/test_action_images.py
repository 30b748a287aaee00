"""The images the actions pull are the ones the release workflow builds, tagged with the package
version; only export pulls the image with torch."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

import ci_onnx
from ci_onnx.orchestration import scaffold

ROOT = Path(__file__).resolve().parents[2]
ACTIONS = {"full": ROOT / "action.yml", "verify": ROOT / "slim/action.yml"}
"""The Dockerfile stage → the container action that pulls its image."""


def _load(path: Path) -> dict[str, Any]:
    data = YAML(typ="safe").load(path.read_text())
    assert isinstance(data, dict)
    return data


def _image(action: Path) -> tuple[str, str]:
    image = _load(action)["runs"]["image"]
    m = re.fullmatch(r"docker://(ghcr\.io/[a-z0-9-]+/[a-z0-9-]+):(\S+)", image)
    assert m, f"{action.relative_to(ROOT)}: runs.image {image!r} is not docker://ghcr.io/<owner>/<name>:<tag>"
    return m.group(1), m.group(2)


@pytest.mark.parametrize("stage", sorted(ACTIONS))
def test_the_image_tag_is_the_package_version(stage: str) -> None:
    _, tag = _image(ACTIONS[stage])
    assert tag == ci_onnx.__version__, (
        f"{ACTIONS[stage].relative_to(ROOT)}: tag {tag} != ci_onnx.__version__ {ci_onnx.__version__}"
    )


def test_the_release_builds_exactly_the_images_the_actions_pull() -> None:
    release = _load(ROOT / ".github/workflows/release.yml")
    names = {release["env"]["IMAGE_FULL"]: "full", release["env"]["IMAGE_VERIFY"]: "verify"}
    pulled = {(stage, _image(action)[0]) for stage, action in ACTIONS.items()}
    assert {(stage, name) for name, stage in names.items()} == pulled
    build = next(s["run"] for s in release["jobs"]["images"]["steps"] if "docker build" in s.get("run", ""))
    assert 'image=$([ "$stage" = full ] && echo "$IMAGE_FULL" || echo "$IMAGE_VERIFY")' in build
    assert 'docker build --target "$stage" --tag "$image:$VERSION"' in build
    stages = set(re.findall(r"^FROM\s+\S+\s+AS\s+(\S+)", (ROOT / "Dockerfile").read_text(), re.M | re.I))
    assert set(names.values()) <= stages


def test_the_release_refuses_a_tag_that_is_not_the_version() -> None:
    steps = _load(ROOT / ".github/workflows/release.yml")["jobs"]["images"]["steps"]
    check = next(s for s in steps if s.get("id") == "version")["run"]
    assert "ci_onnx.__version__" in check and '!= "v$version"' in check and "exit 1" in check


def test_the_slim_action_has_the_interface_of_action_yml() -> None:
    full, slim = _load(ACTIONS["full"]), _load(ACTIONS["verify"])
    assert slim["inputs"] == full["inputs"]
    assert slim["outputs"] == full["outputs"]
    assert _image(ACTIONS["verify"])[0] != _image(ACTIONS["full"])[0]


def test_ci_builds_both_images_and_runs_the_example_through_them() -> None:
    ci = _load(ROOT / ".github/workflows/ci.yml")["jobs"]["image"]
    assert any(s.get("run") == "bash .ci/images" for s in ci["steps"])
    script = (ROOT / ".ci/images").read_text()
    assert "for stage in verify full; do" in script and 'docker build --target "$stage"' in script
    for command, stage in (
        ("plan", "verify"),
        ("export", "full"),
        ("verify", "verify"),
        ("report", "verify"),
    ):
        assert f"step {stage} INPUT_COMMAND={command} " in script, command
    assert "grep -qx 'verdict=pass'" in script


def _steps(text: str) -> list[dict[str, Any]]:
    data = YAML(typ="safe").load(text)
    return [step for job in data["jobs"].values() for step in job.get("steps", [])]


@pytest.mark.parametrize("action", [scaffold.DEFAULT_ACTION, "./"])
def test_only_export_pulls_the_image_with_torch(action: str) -> None:
    settings = scaffold.Settings(action=action)
    seen: dict[str, set[str]] = {}
    for fork_safe in (False, True):
        for rel, text in scaffold.starter_files(settings, fork_safe=fork_safe).items():
            if rel.suffix != ".yml" or rel.parts[0] != ".github":
                continue
            for step in _steps(text):
                if step.get("uses") in (settings.action, settings.slim_action):
                    seen.setdefault(step["uses"], set()).add(step["with"]["command"])
    assert seen[settings.action] == {"export"}
    assert seen[settings.slim_action] == {"plan", "verify", "reverify", "report", "nightly"}
