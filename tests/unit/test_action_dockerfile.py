"""The action's Dockerfile: a torch-free verify stage, a full stage last, pinned, not root.

Images cannot be built in this test suite; these checks read the Dockerfile and the files it copies.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = (ROOT / "Dockerfile").read_text()


def _stages() -> dict[str, str]:
    """Stage name → its instructions (comments and line continuations removed)."""
    text = re.sub(r"\\\n\s*", " ", DOCKERFILE)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    stages: dict[str, list[str]] = {}
    current = ""
    for line in lines:
        m = re.match(r"FROM\s+\S+\s+AS\s+(\S+)", line, re.IGNORECASE)
        if m:
            current = m.group(1)
            stages[current] = [line]
        elif current:
            stages[current].append(line)
    return {name: "\n".join(body) for name, body in stages.items()}


def test_full_is_the_last_stage_so_the_action_builds_it() -> None:
    assert list(_stages())[-1] == "full"
    assert "verify" in _stages()


def test_the_verify_stage_and_its_base_hold_no_torch() -> None:
    stages = _stages()
    for name in ("base", "verify"):
        assert "torch" not in stages[name], name
    assert "torch" not in (ROOT / "docker/requirements-verify.txt").read_text()


def test_torch_is_the_pinned_cpu_build_from_the_pytorch_cpu_index() -> None:
    full = _stages()["full"]
    assert "--index-url https://download.pytorch.org/whl/cpu" in full
    assert re.search(r"ARG TORCH_VERSION=2\.13\.0\b", full)
    assert '"torch==${TORCH_VERSION}"' in full


def test_every_python_requirement_is_pinned() -> None:
    for name in ("requirements-verify.txt", "requirements-export.txt"):
        lines = [
            ln.strip()
            for ln in (ROOT / "docker" / name).read_text().splitlines()
            if ln.strip() and not ln.startswith("#")
        ]
        assert lines, name
        assert all(re.fullmatch(r"[A-Za-z0-9_.\-]+==[0-9][^\s]*", ln) for ln in lines), name


def test_the_base_image_is_pinned_to_a_patch_release_in_the_from_line() -> None:
    """In the FROM line itself: Dependabot's docker updates do not read a FROM that takes an ARG."""
    froms = re.findall(r"^FROM\s+(\S+)", DOCKERFILE, re.M)
    assert froms[0] == "python:3.11.15-slim-trixie", froms
    assert all(f == "base" for f in froms[1:]), froms
    requires = re.search(r'requires-python\s*=\s*"([^"]+)"', (ROOT / "pyproject.toml").read_text())
    assert requires and "3.11" in requires.group(1), "the image's Python is one the package supports"


def test_both_images_carry_the_oci_labels_from_the_build_arguments() -> None:
    license_ = re.search(r'^license\s*=\s*"([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)
    assert license_
    for name in ("verify", "full"):
        stage = _stages()[name]
        for arg, label in (("SOURCE", "source"), ("VERSION", "version"), ("REVISION", "revision")):
            assert re.search(rf"^ARG {arg}=", stage, re.M), (name, arg)
            assert f'org.opencontainers.image.{label}="${{{arg}}}"' in stage, (name, label)
        assert f'org.opencontainers.image.licenses="{license_.group(1)}"' in stage
        assert "ARG SOURCE=https://github.com/onnx-gate/onnx-gate" in stage


def test_runs_as_the_hosted_runner_uid_not_root() -> None:
    stages = _stages()
    assert "useradd --uid 1001" in stages["base"]
    assert "USER gate" in stages["base"]
    for name in ("verify", "full"):
        assert "USER root" not in stages[name]
        assert 'ENTRYPOINT ["python", "-m", "ci_onnx.action"]' in stages[name]


def test_the_build_context_keeps_what_pip_install_needs() -> None:
    ignore = (ROOT / ".dockerignore").read_text().splitlines()
    assert ignore[ignore.index("*") :].count("*") == 1
    for kept in ("!pyproject.toml", "!ci_onnx/", "!matrix/", "!templates/", "!docker/requirements-*.txt"):
        assert kept in ignore
    copied = re.findall(r"COPY\s+(?:--\S+\s+)*(\S+)\s", DOCKERFILE)
    for source in copied:
        assert source == "." or (ROOT / source).exists(), source
