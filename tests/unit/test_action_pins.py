"""Every action a workflow or action of the project uses is pinned to a full commit with its tag in a
comment, is given only inputs that action declares (and every input it requires), and every image
reference carries the package version.

The declared inputs come from a recorded copy of each pinned action's action.yml (names, required,
default: tests/data/actions, written by scripts/record_action_inputs.py), so this needs no network.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

import ci_onnx
from ci_onnx.orchestration import scaffold

ROOT = Path(__file__).resolve().parents[2]
RECORDS = ROOT / "tests" / "data" / "actions"
PIN = re.compile(r"^\s*(?:-\s+)?uses:\s*(?P<ref>\S+?)(?:\s+#\s*(?P<tag>\S+))?\s*$")
OWN = ("./", "onnx-gate/onnx-gate", "docker://")
"""onnx-gate itself (the ref the user chose with --action) and local actions: not third-party pins."""
IMAGE = re.compile(r"ghcr\.io/onnx-gate/(onnx-gate(?:-verify)?)(?::(?P<tag>[^\s\"'`)|]+))?")
NAME_ONLY = re.compile(r"^\s*IMAGE_[A-Z]+:\s*ghcr\.io/onnx-gate/[a-z-]+\s*$")
DOCKER = re.compile(r"\bdocker (?:build|push|pull)\b")


def _shipped() -> dict[str, str]:
    files = sorted((ROOT / ".github/workflows").glob("*.yml"))
    files += [ROOT / "action.yml", ROOT / "slim/action.yml", ROOT / "runner/action.yml"]
    return {str(p.relative_to(ROOT)): p.read_text() for p in files}


def _generated() -> dict[str, str]:
    out: dict[str, str] = {}
    for settings in (
        scaffold.Settings(),
        scaffold.Settings(android=True),
        scaffold.Settings(composite=True),
        scaffold.Settings(action="./", android=True),
    ):
        for fork_safe in (False, True):
            for rel, text in scaffold.starter_files(settings, fork_safe=fork_safe).items():
                if rel.suffix == ".yml" and rel.parts[0] == ".github":
                    out[f"init {settings} fork_safe={fork_safe}: {rel}"] = text
    return out


def _files() -> dict[str, str]:
    return {**_shipped(), **_generated()}


def _record(action: str) -> dict[str, Any]:
    path = RECORDS / (action.replace("/", "--") + ".json")
    assert path.is_file(), (
        f"no recorded inputs of {action}: python scripts/record_action_inputs.py {action} CLONE"
    )
    data = json.loads(path.read_text())
    assert isinstance(data, dict)
    return data


def _steps(node: Any) -> Iterator[dict[str, Any]]:
    """Every step of a workflow's jobs or of a composite action."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "steps" and isinstance(value, list):
                yield from (s for s in value if isinstance(s, dict))
            else:
                yield from _steps(value)


def problems(name: str, text: str) -> list[str]:
    """What is wrong with the pins, inputs and images of one workflow or action file."""
    found: list[str] = []
    for line in text.splitlines():
        m = PIN.match(line)
        if not m or m.group("ref").startswith(OWN):
            continue
        ref, tag = m.group("ref"), m.group("tag") or ""
        action, _, sha = ref.partition("@")
        if not re.fullmatch(r"[0-9a-f]{40}", sha):
            found.append(f"{name}: {ref}: not pinned to a 40-hex commit")
        if not re.fullmatch(r"v\d+\.\d+\.\d+", tag):
            found.append(f"{name}: {ref}: no '# vX.Y.Z' tag comment beside the commit")
        if scaffold.PINNED.get(action) != (sha, tag):
            found.append(
                f"{name}: {ref} # {tag}: not the pin of ci_onnx.orchestration.scaffold.PINNED ({scaffold.PINNED.get(action)})"
            )
    for step in _steps(YAML(typ="safe").load(text)):
        ref = str(step.get("uses", ""))
        if not ref or ref.startswith(OWN):
            continue
        action = ref.partition("@")[0]
        if action not in scaffold.PINNED:
            continue  # reported above
        record = _record(action)
        declared = record["inputs"]
        given = set((step.get("with") or {}).keys())
        for key in sorted(given - set(declared)):
            found.append(f"{name}: {action} {record['tag']} declares no input {key!r}")
        for key, meta in declared.items():
            if meta["required"] and meta["default"] is None and key not in given:
                found.append(f"{name}: {action} {record['tag']} requires the input {key!r}")
    return found + image_problems(name, text)


def image_problems(name: str, text: str) -> list[str]:
    """Image references without the package version, in any text (a workflow, the README)."""
    found: list[str] = []
    for line in text.splitlines():
        if NAME_ONLY.match(line):
            continue  # the name alone, in a variable the docker commands below tag with the version
        for m in IMAGE.finditer(line):
            if m.group("tag") not in (ci_onnx.__version__, "$VERSION", "${VERSION}", "<version>"):
                found.append(
                    f"{name}: {m.group(0)}: an image reference without the package version {ci_onnx.__version__}"
                )
        tagged = ':$VERSION"' in line or any(m.group("tag") for m in IMAGE.finditer(line))
        if DOCKER.search(line) and not tagged:
            found.append(f"{name}: {line.strip()}: a docker command on an image without the version")
    return found


def test_the_recorded_inputs_are_of_the_pinned_commits() -> None:
    for action, (sha, tag) in scaffold.PINNED.items():
        record = _record(action)
        assert (record["sha"], record["tag"]) == (sha, tag), f"{action}: re-record after bumping the pin"
        if record["read_from"] != sha:
            # Read from another commit of the action (the pinned one could not be read where it was
            # recorded): the inputs used must still be there, and the record says it is unverified.
            assert not record["tag_is_sha"], record


def test_every_pin_input_and_image_in_what_the_project_ships_and_init_writes() -> None:
    files = _files()
    assert len(files) > 15
    assert [p for name, text in files.items() for p in problems(name, text)] == []


def test_every_pinned_action_is_used_somewhere() -> None:
    used = "\n".join(_files().values())
    for action, (sha, _) in scaffold.PINNED.items():
        assert f"{action}@{sha}" in used, f"{action} is pinned but no workflow uses it: drop the pin"


@pytest.mark.parametrize(
    ("change", "complaint"),
    [
        (
            ("if-no-files-found: error", "if-no-files-found: error\n          no-such-input: x"),
            "declares no input 'no-such-input'",
        ),
        (("# v6.1.0", ""), "no '# vX.Y.Z' tag comment"),
        (("@d23441a48e516b6c34aea4fa41551a30e30af803", "@v6"), "not pinned to a 40-hex commit"),
        (("# v6.1.0", "# v6.0.0"), "not the pin of"),
    ],
)
def test_the_check_finds_each_fault(change: tuple[str, str], complaint: str) -> None:
    """Guards the test above: each kind of fault, planted once into the self-test, is reported."""
    text = (ROOT / ".github/workflows/self-test.yml").read_text()
    assert change[0] in text
    assert not problems("self-test.yml", text)
    found = problems("self-test.yml", text.replace(change[0], change[1], 1))
    assert any(complaint in p for p in found), found


def test_a_required_input_left_out_and_a_stale_image_are_found() -> None:
    emulator = scaffold.uses("reactivecircus/android-emulator-runner")
    text = f"jobs:\n  j:\n    steps:\n      - uses: {emulator}\n        with:\n          api-level: 34\n"
    assert any("requires the input 'script'" in p for p in problems("x.yml", text))
    stale = image_problems("x", "image: docker://ghcr.io/onnx-gate/onnx-gate:0.0.9")
    assert any("without the package version" in p for p in stale)
    untagged = image_problems("x", "docker pull ghcr.io/onnx-gate/onnx-gate-verify")
    assert any("without the package version" in p for p in untagged)
    assert any("without the version" in p for p in image_problems("x", 'docker push "$IMAGE_FULL"'))
    assert not image_problems(
        "x", '  IMAGE_FULL: ghcr.io/onnx-gate/onnx-gate\n  docker push "$IMAGE_FULL:$VERSION"'
    )


def test_the_readme_and_the_docs_name_the_images_with_the_package_version() -> None:
    texts = {
        p.relative_to(ROOT).as_posix(): p.read_text()
        for p in [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]
    }
    assert any(IMAGE.search(text) for text in texts.values())
    assert [p for name, text in texts.items() for p in image_problems(name, text)] == []
