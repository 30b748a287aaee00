"""Every YAML block of the README and the docs that is a whole workflow (a top-level `jobs:`) lints
clean: actionlint and GitHub's workflow schema."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest

from ci_onnx.contracts import proc

ROOT = Path(__file__).resolve().parents[2]
PAGES = (ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")))


def _tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if not found:
        pytest.skip(f"{name} is not installed: pip install -e '.[dev]' brings it")
    return found


def yaml_blocks(markdown: str) -> list[str]:
    """The ```yaml blocks that are whole workflows: a top-level ``jobs:`` line."""
    blocks = re.findall(r"^```ya?ml\n(.*?)^```", markdown, re.MULTILINE | re.DOTALL)
    return [b for b in blocks if re.search(r"^jobs:", b, re.MULTILINE)]


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


def test_readme_and_docs_workflows_lint_clean(tmp_path: Path) -> None:
    blocks = [b for page in PAGES for b in yaml_blocks(page.read_text())]
    assert len(blocks) >= 2, "the README and the action's page each show a workflow"
    assert not lint(blocks, tmp_path)


def test_the_extraction_finds_blocks_and_lint_finds_faults(tmp_path: Path) -> None:
    """Guards the test above against passing on nothing."""
    good = (
        "name: x\non: push\npermissions: {}\n"
        "jobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ok\n"
    )
    bad = good.replace("runs-on", "runs_on")
    text = f"# t\n\n```yaml\n{good}```\n\n```yaml\n{bad}```\n\n```yaml\nversion: 1\n```\n"
    blocks = yaml_blocks(text)
    assert blocks == [good, bad]
    assert len(lint(blocks, tmp_path)) == 2
    assert not lint([good], tmp_path / "again")
