"""Cached exports for ``onnx-gate run``: a bundle is reused when nothing that determines it changed.

What determines the bundles of one export job is its key (ci_onnx.export.cache_key: the config, the
declared inputs, the tool versions) and what the export read (ci_onnx.export.record, observed by the
export child and stored in the entry); this module is the store of entries by key. An entry is
reused only when every file its record names hashes the same and every version is the same.

An entry is a directory ``<cache>/exports/<key>/`` holding the job's bundle directories and
``entry.json`` (the key's material, each bundle's manifest sha256), moved into place complete in one
rename. On reuse every file is checked against its manifest's sha256: an entry that is partial,
edited or corrupt is removed and the job exported again, with a warning. Only exports whose worker
finished are stored (a crash or a timeout may not happen again).

Imports neither torch nor onnx: the parent decides, and the versions come from package metadata.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from ci_onnx.config import Config
from ci_onnx.contracts.bundle import MANIFEST, Manifest, read_manifest, sha256_of, write_manifest
from ci_onnx.contracts.errors import BundleError
from ci_onnx.contracts.results import CheckResult
from ci_onnx.export import record
from ci_onnx.export.cache_key import FORMAT, Key, bundle_keys, key_for
from ci_onnx.export.parent import Job, Outcome, binding_lines, export_all

ENTRY = "entry.json"
EXPORTS = "exports"
KEEP = 64
"""Entries kept; storing one more removes the least recently used beyond this many."""

Log = Callable[[str], None]


# -- entries -------------------------------------------------------------------------------------


def entry_dir(cache_root: Path, key: Key) -> Path:
    return cache_root / EXPORTS / key.digest


def cacheable(outcomes: Sequence[Outcome]) -> bool:
    """Whether the job's worker finished for every bundle and recorded what it read: the parent
    writes a bundle's export finding without figures when the export crashed or timed out, and that
    may not happen again; without a record nothing could prove a later reuse sound."""
    return bool(outcomes) and all(record.of_findings(o.manifest.findings) is not None for o in outcomes)


def stale(cache_root: Path, key: Key, root: Path) -> str:
    """Why the entry of ``key`` may not be reused: the first input its export read that changed
    (``src/mylib/layers.py changed``), or that it holds no record; "" when everything is the same."""
    try:
        meta = json.loads((entry_dir(cache_root, key) / ENTRY).read_text())
    except (OSError, ValueError):
        return ""  # a damaged entry: restore says so, with a warning, and it is exported again
    read = record.Record.from_json(meta.get("record")) if isinstance(meta, dict) else None
    if read is None:
        return "the cached export holds no record of what it read"
    return record.summary(record.changes(read, root))


def store(cache_root: Path, key: Key, outcomes: Sequence[Outcome]) -> Path | None:
    """Copy the job's bundles into a new entry, complete or not at all (one rename)."""
    final = entry_dir(cache_root, key)
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{key.short}-", dir=final.parent))
    try:
        manifests = {}
        read = record.of_findings(outcomes[0].manifest.findings) if outcomes else None
        for o in outcomes:
            shutil.copytree(o.directory, staging / o.directory.name)
            manifests[o.directory.name] = sha256_of(staging / o.directory.name / MANIFEST)
        entry = {
            "format": FORMAT,
            "key": key.digest,
            "created": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
            "bundles": manifests,
            "material": key.material,
            "record": read.to_json() if read is not None else None,
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
    read = record.of_findings(manifest.findings)
    evidence = (
        f"; nothing it read changed: {len(read.files)} file(s) hash the same, "
        f"{len(read.distributions)} distribution version(s) are the same"
        if read is not None
        else ""
    )
    note = f"reused from cache {key.short} (exported {created}; nothing exported in this run{evidence})"
    return _noted(manifest, note, {"cache": "reused", "cache_key": key.short, "exported_at": created})


def mark_reexported(manifest: Manifest, why: str) -> Manifest:
    """The export finding says why the cached export was not reused ("src/mylib/layers.py changed")."""
    return _noted(manifest, f"re-exported: {why}", {"cache": "re-exported", "changed": why})


def _noted(manifest: Manifest, note: str, figures: dict[str, str]) -> Manifest:
    def mark(f: CheckResult) -> CheckResult:
        if f.name != "export":
            return f
        return dataclasses.replace(f, message=f"{f.message}; {note}", figures={**f.figures, **figures})

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
    changed: dict[Job, str] = {}
    for job in jobs:
        try:
            key = key_for(cfg, job, exclude=exclude)
        except OSError as exc:
            log(f"{job.key}: not cached: {exc}")
            keys[job] = None
            misses.append(job)
            continue
        keys[job] = key
        entry = entry_dir(cache_root, key)
        if not entry.exists():
            misses.append(job)
            continue
        why = stale(cache_root, key, record.repository_of(cfg.root))
        if why:
            log(f"{job.key}: re-exporting: {why}")
            _discard(entry)
            changed[job] = why
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
        for job in misses:
            job_key = keys[job]
            mine = [o for o in fresh if o.job == job]
            if job_key is not None and cacheable(mine) and store(cache_root, job_key, mine) is None:
                log(f"{job.key}: warning: could not store the export in {cache_root}")
        outcomes.extend(_said(o, changed.get(o.job, "")) for o in fresh)  # stored as exported
    return outcomes


def _said(outcome: Outcome, why: str) -> Outcome:
    """``outcome`` whose bundle says why it was exported again, where a stale entry was the cause."""
    if not why:
        return outcome
    manifest = mark_reexported(outcome.manifest, why)
    write_manifest(outcome.directory, manifest)
    return dataclasses.replace(outcome, manifest=manifest)


def entries(cache_root: Path) -> Iterator[Path]:
    """The complete entries of the cache (for tests and clean-up)."""
    root = cache_root / EXPORTS
    yield from (p for p in sorted(root.glob("*")) if (p / ENTRY).is_file()) if root.is_dir() else ()


def was_reused(manifest: Manifest) -> bool:
    """Whether this bundle came from the cache in this run (its export finding says so)."""
    return any(f.name == "export" and f.figures.get("cache") == "reused" for f in manifest.findings)
