"""Which onnx-gate made a bundle or a result: its version and a digest of its installed files.

A version alone names many builds: a checkout of main, a branch, a wheel built from either all say
1.0.0. The export cache and the reuse of the base's results ("unchanged since") key on the build,
so that no bundle or verdict made by other code than the running one stands for what it would make.
A released install reads the same files on every run, so nothing is lost where nothing changed.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

import ci_onnx

_SKIPPED = frozenset({"__pycache__", "node_modules"})
"""Folders that are no part of the build: bytecode, and npm installs made beside a runner."""
_DATA = {"matrix": "*.toml", "templates": "**/*.j2"}
"""The declared data the wheel ships inside the package (ci_onnx._data) and a checkout keeps at its
root: each is hashed under its own name wherever it is, so a checkout and its wheel are one build."""


@functools.cache
def build_id() -> str:
    """``1.0.0+3f2a9c1d07be``: the version and the first 12 hex digits of the package's digest."""
    from ci_onnx import _data

    package = Path(ci_onnx.__file__).resolve().parent
    files = {
        path.relative_to(package).as_posix(): path
        for path in _files(package)
        if path.relative_to(package).parts[:2] not in {("_data", name) for name in _DATA}
    }
    for name, pattern in _DATA.items():
        root = _data.locate(name)
        files.update({f"_data/{name}/{p.relative_to(root).as_posix()}": p for p in root.glob(pattern)})
    return f"{ci_onnx.__version__}+{digest(files)[:12]}"


def files_digest(root: Path) -> str:
    """The digest of every file under ``root``, bytecode and npm installs left out."""
    return digest({p.relative_to(root).as_posix(): p for p in _files(root)})


def digest(files: dict[str, Path]) -> str:
    """The sha256 over each file's name and bytes, in name order."""
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(name.encode() + b"\0")
        h.update(files[name].read_bytes() + b"\0")
    return h.hexdigest()


def _files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and not _SKIPPED & set(p.relative_to(root).parts)]
