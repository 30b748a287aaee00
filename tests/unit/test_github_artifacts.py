"""A pull request's baseline through the artifacts API, against the OpenAPI-checked stand-in."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from ci_onnx.github import artifacts
from ci_onnx.github.client import Client, GitHubError
from ci_onnx.github.context import Repo
from tests.fakegithub import server
from tests.fakegithub.server import FakeGitHub

REPO = Repo("acme", "digits")
BASE = "b" * 40
TIP = "c" * 40


@pytest.fixture
def gh() -> Iterator[FakeGitHub]:
    with server.running(lifetime_s=30) as fake:
        yield fake
        assert fake.state.violations == []


def zipped(files: dict[str, str] | dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    return buf.getvalue()


BASELINE = zipped(
    {"plan.json": "{}", "baseline.json": json.dumps({"commit": BASE}), "collected/r.json": "{}"}
)


def find(gh: FakeGitHub, tmp_path: Path) -> artifacts.Found:
    client = Client(server.TOKEN, gh.url)
    return artifacts.find(client, REPO, base_sha=BASE, base_ref="main", dest=tmp_path / "baseline")


def test_the_run_of_the_base_commit_is_found_and_its_artifact_unpacked(
    gh: FakeGitHub, tmp_path: Path
) -> None:
    gh.state.add_run(TIP, artifacts={artifacts.ARTIFACT: zipped({"plan.json": "newer"})})
    rid = gh.state.add_run(BASE, artifacts={"onnx-gate-report": b"x", artifacts.ARTIFACT: BASELINE})
    gh.state.add_run(TIP, artifacts={artifacts.ARTIFACT: zipped({"plan.json": "newest"})})
    found = find(gh, tmp_path)
    assert found.directory == tmp_path / "baseline" and found.commit == BASE and found.note == ""
    assert found.source == f"the onnx-gate-baseline artifact of run {rid} (push to main)"
    assert (tmp_path / "baseline" / "plan.json").read_text() == "{}"
    asked = [(q.operation, q.query) for q in gh.state.requests]
    assert ("actions/list-workflow-runs-for-repo", {"per_page": "100", "head_sha": BASE}) in asked
    assert asked[-1][0] == "actions/download-artifact"


def test_without_a_run_of_the_base_commit_the_newest_successful_push_on_the_branch_is_used_and_named(
    gh: FakeGitHub, tmp_path: Path
) -> None:
    gh.state.add_run(BASE, artifacts={})  # the base commit's run left no baseline (it failed early)
    gh.state.add_run(TIP, conclusion="failure", artifacts={artifacts.ARTIFACT: BASELINE})
    older = "d" * 40
    gh.state.add_run(older, artifacts={artifacts.ARTIFACT: BASELINE})
    found = find(gh, tmp_path)
    assert found.commit == older
    assert found.note == (
        "no run of the pull request's base commit bbbbbbb left a baseline, so this is the newest successful "
        "run on main, at ddddddd, not the base commit"
    )


def test_no_baseline_anywhere_is_said_plainly(gh: FakeGitHub, tmp_path: Path) -> None:
    found = find(gh, tmp_path)
    assert found.directory is None
    assert found.note.startswith(
        "no baseline: no run of the base commit bbbbbbb and no successful push run on main"
    )


def test_a_pull_request_run_or_a_forks_run_is_never_a_baseline(gh: FakeGitHub, tmp_path: Path) -> None:
    gh.state.add_run(BASE, event="pull_request", artifacts={artifacts.ARTIFACT: BASELINE})
    gh.state.add_run(BASE, head_repo="mallory/digits", artifacts={artifacts.ARTIFACT: BASELINE})
    gh.state.add_run(TIP, head_repo="mallory/digits", artifacts={artifacts.ARTIFACT: BASELINE})
    found = find(gh, tmp_path)
    assert found.directory is None and not (tmp_path / "baseline").exists()


def test_a_token_without_actions_read_is_named_as_the_reason(gh: FakeGitHub, tmp_path: Path) -> None:
    gh.state.actions_forbidden = True
    found = find(gh, tmp_path)
    assert found.directory is None and "permissions: actions: read" in found.note


def test_the_download_follows_the_redirect_without_the_token(gh: FakeGitHub, tmp_path: Path) -> None:
    """The fixture's check that the storage host got no Authorization header is the assertion."""
    gh.state.add_run(BASE, artifacts={artifacts.ARTIFACT: BASELINE})
    assert find(gh, tmp_path).directory is not None
    assert not gh.state.violations


@pytest.mark.parametrize("name", ["../escape.json", "/etc/passwd", "a/../../b"])
def test_an_artifact_member_outside_the_folder_is_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(GitHubError, match="outside it; not unpacked"):
        artifacts.unpack(zipped({name: "x"}), tmp_path / "dest")
    assert not (tmp_path / "escape.json").exists()


def test_a_download_past_the_size_limit_is_refused(gh: FakeGitHub, tmp_path: Path) -> None:
    rid = gh.state.add_run(BASE, artifacts={artifacts.ARTIFACT: BASELINE})
    aid = gh.state.artifacts[rid][0]["id"]
    client = Client(server.TOKEN, gh.url)
    with pytest.raises(GitHubError, match="larger than 0 MiB"):
        client.download(f"/repos/acme/digits/actions/artifacts/{aid}/zip", max_bytes=10)


def test_a_verify_job_fetches_the_base_commits_bundle_and_times_it_beside_its_own(
    gh: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from ci_onnx.cli import cli
    from tests import bundles

    head = bundles.mlp_bundle(tmp_path / "head" / "op17-onnx")
    base = bundles.mlp_bundle(tmp_path / "base" / "op17-onnx", doc="the base's")
    gh.state.add_run(
        BASE,
        artifacts={
            "onnx-gate-bundle-op17-onnx": zipped(
                {p.relative_to(base).as_posix(): p.read_bytes() for p in base.rglob("*") if p.is_file()}
            )
        },
    )
    event = {"pull_request": {"number": 7, "head": {"sha": "a" * 40}, "base": {"sha": BASE, "ref": "main"}}}
    (tmp_path / "event.json").write_text(json.dumps(event))
    for key, value in {
        "GITHUB_REPOSITORY": "acme/digits",
        "GITHUB_EVENT_PATH": str(tmp_path / "event.json"),
        "GITHUB_API_URL": gh.url,
        "GITHUB_TOKEN": server.TOKEN,
    }.items():
        monkeypatch.setenv(key, value)
    out = tmp_path / "out"
    args = ["verify", "--bundle", str(head), "--target", "ort1.32.0-cpu-op17-onnx", "--out", str(out)]
    result = CliRunner().invoke(cli, [*args, "--baseline", "github"])
    assert result.exit_code == 0, result.output
    assert "the base bundle: the onnx-gate-bundle-op17-onnx artifact of run" in result.output
    written = json.loads((out / "results" / "ort1.32.0-cpu-op17-onnx.json").read_text())
    assert (
        written["observation"]["paired"]["base_bundle"]
        == json.loads((base / "manifest.json").read_text())["files"]["model.onnx"]
    )
    assert (
        server.TOKEN
        not in (out / "observations" / "ort1.32.0-cpu-op17-onnx" / "observation.json").read_text()
    )


@pytest.mark.parametrize(
    ("files", "said"),
    [
        ([("a.json", b"1"), ("a.json", b"2")], "twice"),
        ([("x/", b""), ("x", b"1")], "twice"),
        ([(".", b"1")], "outside it"),
        ([("./", b"")], "outside it"),
    ],
)
def test_colliding_and_empty_members_are_refused(
    tmp_path: Path, files: list[tuple[str, bytes]], said: str
) -> None:
    import warnings

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "Duplicate name": the point of the case
        for name, data in files:
            zf.writestr(name, data)
    with pytest.raises(GitHubError, match=said):
        artifacts.unpack(buf.getvalue(), tmp_path / "dest")


def test_what_an_artifact_unpacks_to_is_bounded_not_only_its_download(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A member of 8 MiB of zeros is a few KiB zipped: the bound is on what it unpacks to."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("results/r.json", b"\0" * (8 << 20))
    assert len(buf.getvalue()) < 64 << 10
    monkeypatch.setattr(artifacts, "MAX_UNPACKED_BYTES", 4 << 20)
    with pytest.raises(GitHubError, match="unpacks to 8388608 bytes"):
        artifacts.unpack(buf.getvalue(), tmp_path / "dest")
    assert not (tmp_path / "dest" / "results" / "r.json").exists()


def test_a_fallback_run_whose_commit_is_not_on_the_base_branch_is_never_a_baseline(
    gh: FakeGitHub, tmp_path: Path
) -> None:
    """A tag named like the base branch gives a push run with that head_branch: its commit is not on
    the branch's history, and what it uploaded is not the base's."""
    gh.state.add_run(TIP, artifacts={artifacts.ARTIFACT: BASELINE})  # on main: the honest fallback
    tag = "d" * 40
    gh.state.add_run(tag, artifacts={artifacts.ARTIFACT: BASELINE}, on_branch=False)  # newer, a tag's
    found = find(gh, tmp_path)
    assert found.directory is not None and found.commit == TIP, found
    asked = [q.operation for q in gh.state.requests]
    assert "repos/compare-commits" in asked
    gh.state.history["main"].remove(TIP)  # now neither is on main's history
    assert find(gh, tmp_path / "again").directory is None
