"""The cache key of one export job (``op17-dynamo`` and its derived precisions): a fingerprint of
everything that determines its bundles, computed before anything is exported.

What goes into it:

- the config's sections that shape a bundle: all of ``model``, ``export`` but the opset and exporter
  lists (the job names its own) and the timeout, ``verify`` but its run settings (timeout, latency
  runs, strict fallback); ``targets`` and ``budgets`` do not reach a bundle;
- the job's opset, exporter and precisions;
- the sha256 of the files the export reads: the factory's source and weights (every source or
  weights file below the factory's directory, or an installed package's name and version), the
  samples, the calibration set, an ONNX-only model and its test data;
- the torch, onnx, onnxscript and onnxruntime versions of the export interpreter, its Python, and
  onnx-gate's own version.

The store of entries by key is ci_onnx.export.cache. Imports neither torch nor onnx: the versions
come from package metadata.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.machinery
import importlib.metadata
import json
import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ci_onnx import __version__, serde
from ci_onnx.bundle import MANIFEST, sha256_of
from ci_onnx.config import Config
from ci_onnx.export.runner import Job

FORMAT = 1
"""Bumped when what goes into a key, or an entry's layout, changes."""
VERSIONED = ("torch", "onnx", "onnxscript", "onnxruntime")

SOURCE_SUFFIXES = frozenset({".py", ".pyi"})
WEIGHT_SUFFIXES = frozenset(
    {".pt", ".pth", ".bin", ".safetensors", ".ckpt", ".pkl", ".pickle", ".npz", ".npy", ".h5", ".msgpack"}
)
DATA_SUFFIXES = frozenset({".json", ".yaml", ".yml", ".txt", ".model", ".vocab", ".cfg", ".toml"})
"""Besides source and weights: model configs and tokenizer files a factory may read."""
SKIP_DIRS = frozenset({"__pycache__", "node_modules", "site-packages", "dist-packages"})
RUN_MARK = "plan.json"
"""Found in the output directory of an ``onnx-gate run`` (results, junit, bundles): never hashed."""
MAX_FILES = 5000
MAX_DEPTH = 6


class Uncacheable(Exception):
    """What the export reads cannot be told from here; the job is exported, and not stored."""


@dataclasses.dataclass(frozen=True)
class Key:
    digest: str
    material: dict[str, Any]

    @property
    def short(self) -> str:
        return self.digest[:12]


def bundle_keys(cfg: Config, job: Job) -> list[str]:
    """The bundle directories one job writes: its fp32 export, then each derived precision."""
    return [job.key, *(f"{job.key}-{p}" for p in cfg.export.precisions if p != "fp32")]


def key_for(cfg: Config, job: Job, *, exclude: Sequence[Path] = ()) -> Key:
    """The cache key of ``job``; ``exclude`` are directories never hashed (the run's output, the cache)."""
    section = serde.to_json
    model = {k: v for k, v in section(cfg.model).items() if k != "id" or v}  # as keys were before ids
    export = {
        k: v for k, v in section(cfg.export).items() if k not in ("opsets", "exporters", "timeout_s", "cache")
    }
    verify = {
        k: v
        for k, v in section(cfg.verify).items()
        if k not in ("timeout_s", "latency_runs", "strict_fallback")
    }
    material: dict[str, Any] = {
        "format": FORMAT,
        "onnx-gate": __version__,
        "python": sys.version.split()[0],
        "versions": {p: _version(p) for p in VERSIONED},
        "job": {"opset": job.opset, "exporter": job.exporter, "precisions": list(cfg.export.precisions)},
        "model": model,
        "export": export,
        "verify": verify,
        "files": input_files(cfg, [p.resolve() for p in exclude]),
    }
    text = json.dumps(material, sort_keys=True, separators=(",", ":"))
    return Key(hashlib.sha256(text.encode()).hexdigest(), material)


def input_files(cfg: Config, exclude: Sequence[Path] = ()) -> dict[str, str]:
    """sha256 of every file the export reads, by a name relative to the config's directory (or the
    installed package's ``name==version``)."""
    m = cfg.model
    out: dict[str, str] = {}
    named = [m.samples, cfg.export.calibration, m.onnx]
    for rel in filter(None, named):
        path = cfg.resolve(rel)
        if path.is_file():
            out[_name(path, cfg.root)] = sha256_of(path)
            data = path.with_name(path.name + ".data")  # external data of an ONNX-only model
            if data.is_file():
                out[_name(data, cfg.root)] = sha256_of(data)
        else:
            out[rel] = "missing"  # the export reports it; the key still differs from when it existed
    if m.test_data:
        root = cfg.resolve(m.test_data)
        for path in sorted(root.rglob("*.pb")) if root.is_dir() else ():
            out[_name(path, cfg.root)] = sha256_of(path)
    if m.factory:
        configs = [p.resolve() for p in (cfg.model_file,) if p is not None]  # keyed by their values
        out.update(_factory_files(m.factory, cfg.root, cfg.path.resolve(), [*exclude, *configs]))
    return out


def _factory_files(spec: str, root: Path, config_file: Path, exclude: Sequence[Path]) -> dict[str, str]:
    target = spec.rpartition(":")[0]
    if target.endswith(".py") or "/" in target:
        path = (root / target).resolve()
        if not path.is_file():
            return {target: "missing"}
        return {_name(p, root): sha256_of(p) for p in _tree(path.parent, {config_file, *exclude}, root)} | {
            _name(path, root): sha256_of(path)
        }
    top = target.split(".")[0]
    found = importlib.machinery.PathFinder.find_spec(top, [str(root), *sys.path])  # finds, imports nothing
    if found is None or (not found.origin and not found.submodule_search_locations):
        raise Uncacheable(f"model.factory {spec!r}: module {top!r} is not found on the path")
    dist = importlib.metadata.packages_distributions().get(top, [])
    location = Path(found.origin or next(iter(found.submodule_search_locations or []))).resolve()
    if dist and any(part in ("site-packages", "dist-packages") for part in location.parts):
        return {f"{name}=={_version(name)}": "installed" for name in sorted(dist)}
    if found.submodule_search_locations:
        base = Path(next(iter(found.submodule_search_locations))).resolve()
        return {_name(p, root): sha256_of(p) for p in _tree(base, {config_file, *exclude}, root)}
    return {_name(location, root): sha256_of(location)}


def _tree(base: Path, exclude: Iterable[Path], root: Path) -> list[Path]:
    """The source, weights and model-data files below ``base``: not hidden ones, not virtual
    environments, caches, bundles or an earlier run's output, not the config itself."""
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
            if suffix in SOURCE_SUFFIXES or suffix in WEIGHT_SUFFIXES or suffix in DATA_SUFFIXES:
                found.append(path)
        if len(found) > MAX_FILES:
            raise Uncacheable(
                f"more than {MAX_FILES} source and weights files below {_name(base, root)}; "
                "set export.cache: false, or keep the model's files in a directory of their own"
            )
    return found


def _name(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.resolve().as_posix()


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return ""
