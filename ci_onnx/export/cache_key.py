"""The cache key of one export job (``op17-dynamo`` and its derived precisions): a fingerprint of
everything that determines its bundles, computed before anything is exported.

What goes into it:

- the config's sections that shape a bundle: all of ``model``, ``export`` but the opset and exporter
  lists (the job names its own) and the timeout, ``verify`` but its run settings (timeout, latency
  runs, strict fallback); ``targets`` and ``budgets`` do not reach a bundle;
- the job's opset, exporter and precisions;
- the sha256 of the files the config names: the samples, the calibration set, an ONNX-only model
  and its test data, and what the export reads unseen (``model.depends_on``'s globs);
- the sha256 of the value of each variable ``model.env`` names (the factory reads them; a value is
  never stored);
- the torch, onnx, onnxscript and onnxruntime versions of the export interpreter, its Python, and
  onnx-gate's own build (its version and a digest of its files: ci_onnx.contracts.provenance).

What the factory reads (its sources wherever they live, its weights, a settings file, the versions
of the packages it imports) is no guess here: the export child records it (ci_onnx.export.record),
the entry stores the record, and an entry is reused only when the record still holds. The store of
entries by key is ci_onnx.export.cache. Imports neither torch nor onnx: the versions
come from package metadata.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ci_onnx.config import Config, key_location
from ci_onnx.contracts import serde
from ci_onnx.contracts.bundle import sha256_of
from ci_onnx.contracts.errors import ConfigError
from ci_onnx.contracts.provenance import build_id
from ci_onnx.export.files import name_of as _name
from ci_onnx.export.parent import Job

FORMAT = 3
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


def key_for(
    cfg: Config, job: Job, *, exclude: Sequence[Path] = (), environ: Mapping[str, str] | None = None
) -> Key:
    """The cache key of ``job``; ``exclude`` are directories never hashed (the run's output, the
    cache); ``environ``: where ``model.env``'s variables are read (default: this process's)."""
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
        "onnx-gate": build_id(),
        "python": sys.version.split()[0],
        "versions": {p: _version(p) for p in VERSIONED},
        "job": {"opset": job.opset, "exporter": job.exporter, "precisions": list(cfg.export.precisions)},
        "model": model,
        "export": export,
        "verify": verify,
        "files": input_files(cfg, [p.resolve() for p in exclude]),
        "env": declared_env(cfg, environ if environ is not None else os.environ),
    }
    text = json.dumps(material, sort_keys=True, separators=(",", ":"))
    return Key(hashlib.sha256(text.encode()).hexdigest(), material)


def combined_key(cfg: Config, jobs: Sequence[Job], *, cache_root: Path | None, out: Path) -> str:
    """One cache key for ``jobs`` as the export cache keys them with ``cache_root`` and ``out``
    (the workflows' actions/cache key); ``uncacheable`` where what the export reads cannot be told."""
    exclude = [p for p in (cache_root, out) if p is not None]
    try:
        digests = [key_for(cfg, job, exclude=exclude).digest for job in jobs]
    except OSError:
        return "uncacheable"
    return hashlib.sha256(",".join(digests).encode()).hexdigest()[:32]


def slot(key: str, commit: str) -> str:
    """The actions/cache key of a commit's export cache: ``key`` and the commit. An entry's reuse is
    decided by its record, not by this key, so a commit whose recorded inputs changed (the same
    ``key``) must still save its fresh entry: under its own slot, restored by the next commit
    through the key's prefix. ``off`` and ``uncacheable`` stay as they are."""
    return f"{key}-{commit[:12]}" if commit and key not in ("off", "uncacheable") else key


def input_files(cfg: Config, exclude: Sequence[Path] = ()) -> dict[str, str]:
    """sha256 of every file the export reads, by a name relative to the config's directory (or the
    installed package's ``name==version``)."""
    m = cfg.model
    out: dict[str, str] = {}
    named = [m.samples, cfg.export.calibration, m.onnx]
    for rel in filter(None, named):
        path = cfg.resolve(rel)
        if path.is_file():
            out[_name(path, cfg.root)] = sha256_of(path)  # its external data: in the record
        else:
            out[rel] = "missing"  # the export reports it; the key still differs from when it existed
    for pattern in m.depends_on:
        found = sorted(p for p in cfg.root.glob(pattern) if p.is_file() and not _below(p, exclude))
        if not found:
            raise ConfigError(
                f"{key_location(cfg, 'model', 'depends_on')}: {pattern!r} matches no file below {cfg.root}; "
                "fix the glob (relative to the config) or remove it"
            )
        out.update({_name(p, cfg.root): sha256_of(p) for p in found})
    if m.test_data:
        root = cfg.resolve(m.test_data)
        for path in sorted(root.rglob("*.pb")) if root.is_dir() else ():
            out[_name(path, cfg.root)] = sha256_of(path)
    return out


def declared_env(cfg: Config, environ: Mapping[str, str]) -> dict[str, str]:
    """``model.env``: each variable's sha256 (its value is never stored), or "unset"."""
    return {
        name: hashlib.sha256(environ[name].encode()).hexdigest() if name in environ else "unset"
        for name in cfg.model.env
    }


def _below(path: Path, directories: Sequence[Path]) -> bool:
    resolved = path.resolve()
    return any(resolved.is_relative_to(d) for d in directories)


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return ""
