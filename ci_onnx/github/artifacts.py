"""A pull request's baseline from GitHub: the ``onnx-gate-baseline`` artifact of its base commit's run.

The PR gate uploads the artifact on every push to the default branch (results, plan, and the
bundles' hashes). For a pull request, the report job asks the REST API (``actions: read``) for the
runs of ``pull_request.base.sha`` (not the branch's tip, which may have moved on), their artifacts,
and the zip. Where no run of that commit left one (its run failed early, or the artifact expired),
it falls back to the newest successful run on the base branch and says which commit that was; where
there is none at all, it says so plainly and the gate judges absolutely.

Only pushes of this repository count: a run triggered by a pull request, or whose head repository is
another (a fork), is never a baseline, whatever its artifacts say.
"""

from __future__ import annotations

import dataclasses
import io
import zipfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

from ci_onnx.github.client import Client, Forbidden, GitHubError
from ci_onnx.github.context import Repo

ARTIFACT = "onnx-gate-baseline"
MAX_ZIP_BYTES = 256 << 20
MAX_FILES = 20_000
MAX_UNPACKED_BYTES = 2 << 30
"""What an artifact may unpack to: a small zip of a huge member is refused before it is read."""
BASELINE_EVENTS = ("push",)
"""The events whose runs may be a baseline: the gate's runs on the default branch."""


@dataclasses.dataclass(frozen=True)
class Found:
    directory: Path | None
    """The unpacked artifact; None when no baseline was found."""
    commit: str = ""
    source: str = ""
    """``the onnx-gate-baseline artifact of run 4711 (push to main)``."""
    note: str = ""
    """What the reader must know: a fallback to another commit, or why there is no baseline."""


def _paginated_runs(client: Client, repo: Repo, params: dict[str, str]) -> list[dict[str, Any]]:
    """The workflow runs matching ``params``, newest first (at most three pages)."""
    runs = client.paginate(f"{repo.path}/actions/runs", params, max_pages=3, key="workflow_runs")
    return [r for r in runs if isinstance(r, dict)]


def _ours(run: dict[str, Any], repo: Repo) -> bool:
    """A run of this repository's own code: a push here, never a pull request's or a fork's."""
    head = run.get("head_repository")
    full_name = head.get("full_name") if isinstance(head, dict) else None
    return run.get("event") in BASELINE_EVENTS and full_name == str(repo)


def _artifact(client: Client, repo: Repo, run_id: int, name: str) -> dict[str, Any] | None:
    r = client.request(
        "GET", f"{repo.path}/actions/runs/{run_id}/artifacts", params={"name": name, "per_page": 10}
    )
    data = r.data if isinstance(r.data, dict) else {}
    found = [
        a
        for a in data.get("artifacts", [])
        if isinstance(a, dict) and a.get("name") == name and not a.get("expired")
    ]
    return found[0] if found else None


def unpack(data: bytes, dest: Path) -> Path:
    """The zip's files under ``dest``; a member that would land outside it, or too many, is refused."""
    dest.mkdir(parents=True, exist_ok=True)
    root = dest.resolve()
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            members = zf.infolist()
            if len(members) > MAX_FILES:
                raise GitHubError(f"the {ARTIFACT} artifact holds {len(members)} files; not unpacked")
            total = sum(m.file_size for m in members)
            if total > MAX_UNPACKED_BYTES:
                raise GitHubError(
                    f"the {ARTIFACT} artifact unpacks to {total} bytes, over {MAX_UNPACKED_BYTES}; "
                    "not unpacked"
                )
            seen: set[Path] = set()
            for m in members:
                name = PurePosixPath(m.filename)
                target = (root / name).resolve()
                if (
                    not m.filename.strip("/.")
                    or name.is_absolute()
                    or ".." in name.parts
                    or not target.is_relative_to(root)
                    or target == root
                ):
                    raise GitHubError(
                        f"the {ARTIFACT} artifact holds {m.filename!r}, outside it; not unpacked"
                    )
                if m.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                if target in seen or target.is_dir():
                    raise GitHubError(f"the {ARTIFACT} artifact holds {m.filename!r} twice; not unpacked")
                seen.add(target)
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(m) as src, target.open("wb") as dst:  # never more than the size it declared
                    left = m.file_size
                    while chunk := src.read(min(1 << 20, left + 1)):
                        left -= len(chunk)
                        if left < 0:
                            raise GitHubError(
                                f"the {ARTIFACT} artifact's {m.filename!r} is larger than it says"
                            )
                        dst.write(chunk)
    except (zipfile.BadZipFile, NotADirectoryError, IsADirectoryError, FileExistsError) as exc:
        raise GitHubError(f"the {ARTIFACT} artifact cannot be unpacked ({exc})") from None
    return dest


def find(
    client: Client,
    repo: Repo,
    *,
    base_sha: str,
    base_ref: str,
    dest: Path,
    info: Callable[[str], None] = lambda _m: None,
    name: str = ARTIFACT,
) -> Found:
    """The baseline of a pull request whose base is ``base_sha`` on ``base_ref``, unpacked in ``dest``:
    the ``onnx-gate-baseline`` artifact, or another of the same run (``name``: a bundle's, so that
    a verify job can time the base bundle beside the head's)."""
    short = base_sha[:7]
    try:
        exact = [r for r in _paginated_runs(client, repo, {"head_sha": base_sha}) if _ours(r, repo)]
        for run in exact:
            artifact = _artifact(client, repo, int(run["id"]), name)
            if artifact is not None:
                return _fetch(client, repo, run, artifact, dest, note="")
        info(f"no run of the base commit {short} left an {name} artifact; trying the newest on {base_ref}")
        latest = _paginated_runs(client, repo, {"branch": base_ref, "event": "push", "status": "success"})
        for run in [r for r in latest if _ours(r, repo)][:10]:
            if not on_branch(client, repo, base_ref, str(run.get("head_sha", ""))):
                info(f"run {run.get('id')} is of a commit not on {base_ref}'s history (a tag of that name?)")
                continue
            artifact = _artifact(client, repo, int(run["id"]), name)
            if artifact is not None:
                other = str(run.get("head_sha", ""))
                note = (
                    f"no run of the pull request's base commit {short} left a baseline, so this is the "
                    f"newest successful run on {base_ref}, at {other[:7]}, not the base commit"
                )
                return _fetch(client, repo, run, artifact, dest, note=note)
    except Forbidden:
        return Found(
            None,
            note="no baseline: the token may not read this repository's Actions artifacts (give the report "
            "job `permissions: actions: read`)",
        )
    except GitHubError as exc:
        return Found(None, note=f"no baseline: {exc.message}")
    return Found(
        None,
        note=f"no baseline: no run of the base commit {short} and no successful push run on {base_ref} left "
        f"an {name} artifact (the gate's runs on pushes to {base_ref} upload it)",
    )


def on_branch(client: Client, repo: Repo, branch: str, sha: str) -> bool:
    """Whether ``sha`` is on ``branch``'s history (GitHub's compare: the branch is at it or past it):
    a push run whose ``head_branch`` is the branch's name may be a tag's. Unknown: not."""
    try:
        found = client.request("GET", f"{repo.path}/compare/{branch}...{sha}").data
    except GitHubError:
        return False
    return isinstance(found, dict) and found.get("status") in ("behind", "identical")


def _fetch(
    client: Client, repo: Repo, run: dict[str, Any], artifact: dict[str, Any], dest: Path, *, note: str
) -> Found:
    data = client.download(
        f"{repo.path}/actions/artifacts/{int(artifact['id'])}/zip", max_bytes=MAX_ZIP_BYTES
    )
    unpack(data, dest)
    branch = run.get("head_branch") or "?"
    name, number = artifact.get("name", ARTIFACT), run.get("run_number", run["id"])
    source = f"the {name} artifact of run {number} (push to {branch})"
    return Found(dest, str(run.get("head_sha", "")), source, note)
