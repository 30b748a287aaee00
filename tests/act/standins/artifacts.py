"""The file moves of actions/upload-artifact, download-artifact and cache, for workflows run by act.

Artifacts live under $ACT_ARTIFACTS/<run id>/<name>/: upload-artifact's layout (one path: its
contents at the root; several: kept relative to their least common ancestor), name clashes refused
as v4 does (a re-run of a job in the same run gets the 409 GitHub answers) unless ``overwrite``,
``if-no-files-found``, and download by name, by ``pattern`` (minimatch's ``{a,b}`` braces;
``merge-multiple`` or one folder per artifact) or from another run (``run-id``). The cache restores a file or a folder by key,
then by the ``restore-keys`` prefixes; it is never saved (no scenario carries state from one night to the next).
Stdlib only: it runs with whatever python3 the host has.
"""

from __future__ import annotations

import fnmatch
import glob
import os
import shutil
import sys
from pathlib import Path


def _lines(value: str) -> list[str]:
    return [line.strip() for line in value.splitlines() if line.strip()]


def _braces(pattern: str) -> list[str]:
    """``a-{x,y}`` as ``a-x`` and ``a-y``: the brace expansion minimatch does for download-artifact's
    pattern (one level, which is what the workflows write)."""
    head, brace, rest = pattern.partition("{")
    inner, close, tail = rest.partition("}")
    if not brace or not close or "," not in inner:
        return [pattern]
    return [head + part + tail for part in inner.split(",")]


def _store(run_id: str = "") -> Path:
    return Path(os.environ["ACT_ARTIFACTS"]) / (run_id or os.environ.get("GITHUB_RUN_ID", "1"))


def upload(name: str, paths: str, if_no_files: str, overwrite: bool = False) -> int:
    workspace = Path(os.environ["GITHUB_WORKSPACE"])
    files: list[Path] = []
    bases: list[Path] = []
    for pattern in _lines(paths):
        for hit in sorted(glob.glob(str(workspace / pattern), recursive=True)):
            p = Path(hit)
            bases.append(p if p.is_dir() else p.parent)
            files += [f for f in p.rglob("*") if f.is_file()] if p.is_dir() else [p]
    if not files:
        message = f"no files were found with the provided path: {paths.strip()}"
        if if_no_files == "error":
            print(f"::error::{message}")
            return 1
        if if_no_files != "ignore":
            print(f"::warning::{message}. No artifacts will be uploaded.")
        return 0
    root = Path(os.path.commonpath([str(b) for b in bases]))
    dest = _store() / name
    if dest.exists() and not overwrite:
        print(
            "::error::Failed to CreateArtifact: Received non-retryable error: Failed request: (409) "
            f"Conflict: an artifact with this name already exists on the workflow run ({name})"
        )
        return 1
    if dest.exists():
        shutil.rmtree(dest)  # overwrite: the old artifact is deleted before the new one is uploaded
        print(f"deleted the earlier artifact {name} (overwrite: true)")
    for f in files:
        target = dest / f.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(f, target)
    print(f"uploaded {len(files)} file(s) as {name}")
    return 0


def download(name: str, pattern: str, merge: bool, path: str, run_id: str) -> int:
    store = _store(run_id)
    dest = Path(os.environ["GITHUB_WORKSPACE"]) / path
    if name:
        if not (store / name).is_dir():
            print(f"::error::Unable to download artifact(s): Artifact not found for name: {name}")
            return 1
        shutil.copytree(store / name, dest, dirs_exist_ok=True)
        return 0
    names = sorted(p.name for p in store.iterdir()) if store.is_dir() else []
    patterns = _braces(pattern or "*")
    for found in (n for n in names if any(fnmatch.fnmatchcase(n, p) for p in patterns)):
        shutil.copytree(store / found, dest if merge else dest / found, dirs_exist_ok=True)
    return 0


def restore_cache(path: str, key: str, restore_keys: str) -> int:
    root = Path(os.environ["ACT_ARTIFACTS"]) / "cache"
    keys = sorted(p.name for p in root.iterdir()) if root.is_dir() else []
    hit = key if key in keys else next((k for p in _lines(restore_keys) for k in keys if k.startswith(p)), "")
    if hit:
        dest = Path(os.environ["GITHUB_WORKSPACE"]) / path
        dest.parent.mkdir(parents=True, exist_ok=True)
        source = root / hit / Path(path).name
        if source.is_dir():
            shutil.copytree(source, dest, dirs_exist_ok=True)
        else:
            shutil.copy2(source, dest)
        print(f"Cache restored from key: {hit}")
    return 0


def main(argv: list[str]) -> int:
    e = os.environ.get
    if argv[0] == "upload":
        overwrite = e("OVERWRITE", "false") == "true"
        return upload(e("NAME", "") or "artifact", e("PATHS", ""), e("IF_NO_FILES", "warn"), overwrite)
    if argv[0] == "download":
        merge = e("MERGE", "false") == "true"
        return download(e("NAME", ""), e("PATTERN", ""), merge, e("DEST", "."), e("RUN_ID", ""))
    return restore_cache(e("CACHE_PATH", ""), e("KEY", ""), e("RESTORE_KEYS", ""))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
