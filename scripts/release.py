"""The last step of a release (.github/workflows/release.yml): the moving tags and the release notes.

    python scripts/release.py --version 1.2.3 --sha COMMIT [--changelog CHANGELOG.md]

After both images are pushed and pulled back anonymously, this points the major and minor tags
(``v1``, ``v1.2``) at the release commit, creating them the first time and moving them after, so
``uses: onnx-gate/onnx-gate@v1`` (and ``@v1.2``) resolve to the newest release of that line; then it
creates the GitHub release of ``v1.2.3`` (or rewrites its notes when a re-run finds it) with the
changelog's section for 1.2.3 as its notes. A version without a section in the changelog stops the
release before anything moves. Reads GITHUB_TOKEN (contents: write), GITHUB_REPOSITORY and
GITHUB_API_URL, as GitHub sets them in a job. ``--check`` only checks the version and the notes,
with no token and no third-party package (the release runs it before it builds anything).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

ROOT = Path(__file__).resolve().parents[1]

if TYPE_CHECKING:
    from ci_onnx.github.client import Client

_FINAL = re.compile(r"^(\d+)\.(\d+)\.(\d+)$")
_HEADING = re.compile(r"^## \[?v?(?P<version>[^\]\s]+)\]?(?:\s.*)?$")


class ReleaseError(Exception):
    """What stops a release, in one line."""


def moving_tags(version: str) -> tuple[str, str]:
    """``1.2.3`` → (``v1``, ``v1.2``): the tags a workflow's ``uses: …@v1`` names."""
    m = _FINAL.match(version)
    if not m:
        major = version.split(".")[0]
        raise ReleaseError(
            f"version {version!r} is not a final release MAJOR.MINOR.PATCH; only those move v{major}"
        )
    return f"v{m.group(1)}", f"v{m.group(1)}.{m.group(2)}"


def notes(changelog: str, version: str, name: str = "CHANGELOG.md") -> str:
    """The body of the changelog's ``## [version]`` (or ``## version``) section, without its heading."""
    lines = changelog.splitlines()
    start = next((i for i, line in enumerate(lines) if _version_of(line) == version), None)
    if start is None:
        found = [v for v in map(_version_of, lines) if v]
        raise ReleaseError(
            f"{name} has no section '## [{version}]' (it has: {', '.join(found) or 'none'}); "
            "write the release notes there before tagging"
        )
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    body = "\n".join(lines[start + 1 : end]).strip()
    if not body:
        raise ReleaseError(f"{name}: the section for {version} is empty; say what the release changes")
    return body + "\n"


def _version_of(line: str) -> str:
    m = _HEADING.match(line)
    return m.group("version") if m else ""


def move_tag(client: Client, repo: str, tag: str, sha: str) -> str:
    """Point ``tag`` at ``sha``; returns what was done."""
    from ci_onnx.github.client import NotFound

    try:
        current = client.request("GET", f"/repos/{repo}/git/ref/tags/{tag}").data["object"]["sha"]
    except NotFound:
        client.request("POST", f"/repos/{repo}/git/refs", json={"ref": f"refs/tags/{tag}", "sha": sha})
        return f"{tag}: created at {sha}"
    if current == sha:
        return f"{tag}: already at {sha}"
    client.request("PATCH", f"/repos/{repo}/git/refs/tags/{tag}", json={"sha": sha, "force": True})
    return f"{tag}: moved from {current} to {sha}"


def publish_release(client: Client, repo: str, version: str, body: str) -> str:
    """Create the release of ``v<version>`` with ``body``, or rewrite its notes when it exists."""
    from ci_onnx.github.client import NotFound

    tag = f"v{version}"
    try:
        found = client.request("GET", f"/repos/{repo}/releases/tags/{tag}").data
    except NotFound:
        made = client.request(
            "POST",
            f"/repos/{repo}/releases",
            json={"tag_name": tag, "name": tag, "body": body, "make_latest": "true"},
        ).data
        return f"release {tag}: created, {made['html_url']}"
    client.request("PATCH", f"/repos/{repo}/releases/{found['id']}", json={"name": tag, "body": body})
    return f"release {tag}: notes rewritten, {found['html_url']}"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", required=True)
    parser.add_argument("--sha", default="")
    parser.add_argument("--changelog", type=Path, default=ROOT / "CHANGELOG.md")
    parser.add_argument("--check", action="store_true", help="check the version and the notes only")
    args = parser.parse_args(argv)
    try:
        tags = moving_tags(args.version)
        body = notes(args.changelog.read_text(), args.version, args.changelog.name)
        if args.check:
            print(f"release {args.version}: moves {', '.join(tags)}; notes: {len(body.splitlines())} lines")
            return 0
        return _publish(args.version, args.sha, tags, body)
    except (ReleaseError, OSError) as exc:
        print(f"::error title=release::{exc}")
        return 1


def _publish(version: str, sha: str, tags: tuple[str, ...], body: str) -> int:
    sys.path.insert(0, str(ROOT))
    from ci_onnx.github.client import Client, GitHubError

    repo = os.environ.get("GITHUB_REPOSITORY", "")
    token = os.environ.get("GITHUB_TOKEN", "")
    try:
        if not re.fullmatch(r"[0-9a-f]{40}", sha):
            raise ReleaseError(f"--sha {sha!r}: not a full commit")
        if not repo or not token:
            raise ReleaseError("GITHUB_REPOSITORY and GITHUB_TOKEN (contents: write) are needed")
        client = Client(token, os.environ.get("GITHUB_API_URL", "https://api.github.com"))
        for tag in tags:
            print(move_tag(client, repo, tag, sha))
        print(publish_release(client, repo, version, body))
    except (ReleaseError, GitHubError) as exc:
        print(f"::error title=release::{exc}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
