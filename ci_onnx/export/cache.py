"""Cached exports for ``onnx-gate run``: a bundle is reused when nothing that determines it changed.

What determines the bundles of one export job (``op17-dynamo`` and its derived precisions):

- the config's sections that shape a bundle: all of ``model``, ``export`` but the opset and exporter
  lists (the job names its own) and the timeout, ``verify`` but its run settings (timeout, latency
  runs, strict fallback); ``targets`` and ``budgets`` do not reach a bundle;
- the job's opset, exporter and precisions;
- the sha256 of the files the export reads: the factory's source and weights (every source or
  weights file below the factory's directory, or an installed package's name and version), the
  samples, the calibration set, an ONNX-only model and its test data;
- the torch, onnx, onnxscript and onnxruntime versions of the export interpreter, its Python, and
  onnx-gate's own version.

An entry is a directory ``<cache>/exports/<key>/`` holding the job's bundle directories and
``entry.json`` (the key's material, each bundle's manifest sha256), moved into place complete in one
rename. On reuse every file is checked against its manifest's sha256: an entry that is partial,
edited or corrupt is removed and the job exported again, with a warning. Only exports whose worker
finished are stored (a crash or a timeout may not happen again).

Imports neither torch nor onnx: the parent decides, and the versions come from package metadata.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.machinery
import importlib.metadata
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ci_onnx import __version__, serde
from ci_onnx.bundle import MANIFEST, Manifest, read_manifest, sha256_of, write_manifest
from ci_onnx.config import Config
from ci_onnx.errors import BundleError
from ci_onnx.export.runner import Job, Outcome, binding_lines, export_all
from ci_onnx.results import CheckResult

FORMAT = 1
"""Bumped when what goes into a key, or an entry's layout, changes."""
ENTRY = "entry.json"
EXPORTS = "exports"
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
KEEP = 64
"""Entries kept; storing one more removes the least recently used beyond this many."""

Log = Callable[[str], None]


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


# -- entries -------------------------------------------------------------------------------------


def entry_dir(cache_root: Path, key: Key) -> Path:
    return cache_root / EXPORTS / key.digest


def cacheable(outcomes: Sequence[Outcome]) -> bool:
    """Whether the job's worker finished for every bundle: the parent writes a bundle's export finding
    without figures when the export crashed or timed out, and that may not happen again."""
    for o in outcomes:
        export = next((f for f in o.manifest.findings if f.name == "export"), None)
        if export is None or (not export.figures and o.job.exporter != "onnx"):
            return False
    return bool(outcomes)


def store(cache_root: Path, key: Key, outcomes: Sequence[Outcome]) -> Path | None:
    """Copy the job's bundles into a new entry, complete or not at all (one rename)."""
    final = entry_dir(cache_root, key)
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{key.short}-", dir=final.parent))
    try:
        manifests = {}
        for o in outcomes:
            shutil.copytree(o.directory, staging / o.directory.name)
            manifests[o.directory.name] = sha256_of(staging / o.directory.name / MANIFEST)
        entry = {
            "format": FORMAT,
            "key": key.digest,
            "created": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
            "bundles": manifests,
            "material": key.material,
        }
        (staging / ENTRY).write_text(json.dumps(entry, indent=1, sort_keys=True))
        if final.exists():
            shutil.rmtree(final)
        os.replace(staging, final)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        return None
    prune(cache_root)
    return final


def prune(cache_root: Path, keep: int = KEEP) -> list[Path]:
    """Remove the least recently used entries beyond ``keep`` (a reuse touches its entry.json)."""

    def used(p: Path) -> float:
        try:
            return (p / ENTRY).stat().st_mtime
        except OSError:
            return 0.0

    old = sorted(entries(cache_root), key=used, reverse=True)[keep:]
    for entry in old:
        _discard(entry)
    return old


def restore(cache_root: Path, key: Key, cfg: Config, job: Job, out: Path) -> list[Outcome]:
    """The job's bundles from the cache, copied to ``out`` and checked; BundleError when the entry is
    missing (``None`` from :func:`lookup` first), partial, edited or corrupt."""
    entry = entry_dir(cache_root, key)
    try:
        meta = json.loads((entry / ENTRY).read_text())
        bundles = meta["bundles"]
        created = str(meta.get("created", ""))
        if not isinstance(bundles, dict) or meta.get("key") != key.digest:
            raise ValueError("entry.json does not describe this key")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise BundleError(f"{entry}: not a complete cache entry ({exc})") from None
    wanted = bundle_keys(cfg, job)
    if sorted(bundles) != sorted(wanted):
        raise BundleError(f"{entry}: holds {sorted(bundles)}, the job writes {wanted}")
    outcomes = []
    for name in wanted:
        cached = entry / name
        if not (cached / MANIFEST).is_file() or sha256_of(cached / MANIFEST) != bundles[name]:
            raise BundleError(f"{cached}: its manifest is missing or differs from when it was stored")
        read_manifest(cached)  # every file against its sha256
        dest = out / name
        if dest.exists():
            shutil.rmtree(dest)
        shutil.copytree(cached, dest)
        manifest = read_manifest(dest)
        manifest = mark_reused(manifest, key, created)
        write_manifest(dest, manifest)
        outcomes.append(Outcome(job, dest, manifest, 0.0))
    os.utime(entry / ENTRY)  # recently used: the last to be pruned
    return outcomes


def mark_reused(manifest: Manifest, key: Key, created: str) -> Manifest:
    """The export finding says the bundle came from the cache, so the report and junit say so too."""
    note = f"reused from cache {key.short} (exported {created}; nothing exported in this run)"

    def mark(f: CheckResult) -> CheckResult:
        if f.name != "export":
            return f
        figures = {**f.figures, "cache": "reused", "cache_key": key.short, "exported_at": created}
        return dataclasses.replace(f, message=f"{f.message}; {note}", figures=figures)

    return dataclasses.replace(manifest, findings=tuple(mark(f) for f in manifest.findings))


def _discard(entry: Path) -> None:
    shutil.rmtree(entry, ignore_errors=True)


def _log_reused(restored: Sequence[Outcome], key: Key, log: Callable[[str], None]) -> None:
    """One line per bundle taken from the cache, then the warnings its conversion gave when it was
    made (what a fresh export prints), so a rerun does not hide them."""
    fp32 = [
        o.manifest.findings[0] for o in restored if o.manifest.precision == "fp32" and o.manifest.findings
    ]
    inherited = len(fp32[0].warnings) if fp32 else 0  # the export's own, not the conversion's
    for o in restored:
        log(f"{o.directory.name}: reused from cache {key.short}, nothing exported")
        if o.manifest.precision == "fp32":
            for line in binding_lines(o.manifest):
                log(f"{o.directory.name}: {line}")
        if o.manifest.precision != "fp32" and o.manifest.findings:
            for warning in o.manifest.findings[0].warnings[inherited:]:
                log(f"{o.directory.name}: warning: {warning}")


def export_cached(
    cfg: Config,
    jobs: Sequence[Job],
    out: Path,
    log: Log,
    *,
    cache_root: Path,
    enabled: bool = True,
    exclude: Sequence[Path] = (),
    export: Callable[[Config, Sequence[Job], Path, Log], list[Outcome]] = export_all,
) -> list[Outcome]:
    """Reuse what the cache holds for ``jobs``, export the rest (``export``) and store them.

    One line per reused bundle; a bad entry is a warning, then an export, never a wrong bundle.
    """
    if not enabled:
        log("export cache: off (--no-cache or export.cache: false): exporting every bundle")
        return export(cfg, jobs, out, log)
    exclude = (*exclude, cache_root, out)  # never key a bundle on the cache or on the run's own output
    keys: dict[Job, Key | None] = {}
    outcomes: list[Outcome] = []
    misses: list[Job] = []
    for job in jobs:
        try:
            key = key_for(cfg, job, exclude=exclude)
        except (Uncacheable, OSError) as exc:
            log(f"{job.key}: not cached: {exc}")
            keys[job] = None
            misses.append(job)
            continue
        keys[job] = key
        entry = entry_dir(cache_root, key)
        if not entry.exists():
            misses.append(job)
            continue
        try:
            restored = restore(cache_root, key, cfg, job, out)
        except (BundleError, OSError) as exc:
            message = getattr(exc, "message", str(exc))
            log(f"{job.key}: warning: the cached export is unusable, exporting again: {message}")
            _discard(entry)
            misses.append(job)
            continue
        _log_reused(restored, key, log)
        outcomes.extend(restored)
    if not misses:
        log("nothing exported: every bundle came from the cache (--no-cache exports them again)")
    else:
        fresh = export(cfg, misses, out, log)
        outcomes.extend(fresh)
        for job in misses:
            job_key = keys[job]
            mine = [o for o in fresh if o.job == job]
            if job_key is not None and cacheable(mine) and store(cache_root, job_key, mine) is None:
                log(f"{job.key}: warning: could not store the export in {cache_root}")
    return outcomes


def entries(cache_root: Path) -> Iterator[Path]:
    """The complete entries of the cache (for tests and clean-up)."""
    root = cache_root / EXPORTS
    yield from (p for p in sorted(root.glob("*")) if (p / ENTRY).is_file()) if root.is_dir() else ()


def was_reused(manifest: Manifest) -> bool:
    """Whether this bundle came from the cache in this run (its export finding says so)."""
    return any(f.name == "export" and f.figures.get("cache") == "reused" for f in manifest.findings)
