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
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ci_onnx import __version__, serde
from ci_onnx.bundle import sha256_of
from ci_onnx.config import Config
from ci_onnx.export.files import Uncacheable
from ci_onnx.export.files import name_of as _name
from ci_onnx.export.files import tree as _tree
from ci_onnx.export.runner import Job

FORMAT = 1
"""Bumped when what goes into a key, or an entry's layout, changes."""
VERSIONED = ("torch", "onnx", "onnxscript", "onnxruntime")


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


def combined_key(cfg: Config, jobs: Sequence[Job], *, cache_root: Path | None, out: Path) -> str:
    """One cache key for ``jobs`` as the export cache keys them with ``cache_root`` and ``out``
    (the workflows' actions/cache key); ``uncacheable`` where what the export reads cannot be told."""
    exclude = [p for p in (cache_root, out) if p is not None]
    try:
        digests = [key_for(cfg, job, exclude=exclude).digest for job in jobs]
    except (Uncacheable, OSError):
        return "uncacheable"
    return hashlib.sha256(",".join(digests).encode()).hexdigest()[:32]


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


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return ""
