"""How large a model's weights are, from the weight files below its factory's directory.

The plan estimates an export's and a verify job's work from it (ci_onnx/plan/cijobs.py, the export
workers); what an export reads is recorded, not looked for here (ci_onnx/export/record.py).
Standard library only: the plan imports this, and must stay light.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from ci_onnx.contracts.bundle import MANIFEST

if TYPE_CHECKING:
    from ci_onnx.config import Config

WEIGHT_SUFFIXES = frozenset(
    {".pt", ".pth", ".bin", ".safetensors", ".ckpt", ".pkl", ".pickle", ".npz", ".npy", ".h5", ".msgpack"}
)
SKIP_DIRS = frozenset({"__pycache__", "node_modules", "site-packages", "dist-packages"})
RUN_MARK = "plan.json"
"""Found in the output directory of an ``onnx-gate run`` (results, junit, bundles): never hashed."""
MAX_FILES = 5000
MAX_DEPTH = 6


class Uncacheable(Exception):
    """Too many files below a factory's directory to size its weights from."""


def model_bytes(cfg: Config) -> int | None:
    """The size of the model's weights as the files the export reads hold them: an ONNX-only
    model's file and its external data, or the weight files below a factory's directory (the
    samples and calibration set aside); None where no such file can be seen from here (an installed
    package, weights made in code)."""
    m = cfg.model
    if m.onnx:
        path = cfg.resolve(m.onnx)
        files = [p for p in (path, path.with_name(path.name + ".data")) if p.is_file()]
    else:
        target = m.factory.rpartition(":")[0]
        factory = (cfg.root / target).resolve()
        if not (target.endswith(".py") or "/" in target) or not factory.is_file():
            return None
        data = {cfg.resolve(rel) for rel in (m.samples, cfg.export.calibration) if rel}
        try:
            files = weights(factory.parent, {cfg.path.resolve(), *data}, cfg.root)
        except Uncacheable:
            return None
    size = sum(p.stat().st_size for p in files)
    return size or None


def weights(base: Path, exclude: Iterable[Path], root: Path) -> list[Path]:
    """The weight files below ``base``: not hidden ones, not in virtual environments, caches,
    bundles or an earlier run's output."""
    skip = set(exclude)
    found: list[Path] = []
    for directory, dirs, files in os.walk(base):
        here = Path(directory)
        depth = len(here.relative_to(base).parts)
        dirs[:] = sorted(
            d
            for d in dirs
            if not d.startswith(".")
            and d not in SKIP_DIRS
            and depth < MAX_DEPTH
            and (here / d).resolve() not in skip
            and not (here / d / "pyvenv.cfg").exists()
            and not (here / d / MANIFEST).exists()
            and not (here / d / RUN_MARK).exists()
        )
        for name in sorted(files):
            path = here / name
            suffix = path.suffix.lower()
            if name.startswith(".") or path.resolve() in skip:
                continue
            if suffix in WEIGHT_SUFFIXES:
                found.append(path)
        if len(found) > MAX_FILES:
            raise Uncacheable(f"more than {MAX_FILES} weight files below {name_of(base, root)}")
    return found


def name_of(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.resolve().as_posix()
