"""The reuse mutation suite: every edit of an input an export read must export it again; an edit of a
file no export read must leave every model reused.

    python -m tests.reuse.mutations [--only NAME] [--keep DIR]

Each layout of tests/reuse/layouts.py becomes a repository; ``onnx-gate export`` exports it once
with the export cache (the export child records what it read). Then each mutation is applied, the
reuse decision is asked of the cache as ``onnx-gate export`` and the plan ask it (the key, then the
entry's record: ci_onnx.export.cache.stale, ci_onnx.export.record.changes), and the edit is undone.
The mutations of read inputs are the layout's own list and every file of the repository a record
names; the kill rate is the share of them that export again; the reuse rate is the share of edits
to unread files after which every model is reused. Prints one row a layout.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from ci_onnx.config import cascade
from ci_onnx.export import cache, cache_key, parent, record
from ci_onnx.plan import onnx_opset
from tests.reuse import layouts
from tests.reuse.layouts import BUMP, Layout


@dataclasses.dataclass(frozen=True)
class Outcome:
    layout: str
    read: int
    killed: int
    unread: int
    reused: int
    missed: tuple[str, ...]
    """Read inputs whose mutation was reused, and unread files whose edit exported again."""
    reasons: tuple[str, ...]
    check_s: float
    """The time the decisions took (hashing what the records name), all mutations together."""

    @property
    def kill_rate(self) -> float:
        return self.killed / self.read if self.read else 0.0

    @property
    def reuse_rate(self) -> float:
        return self.reused / self.unread if self.unread else 0.0


def export(config: Path, work: Path, layout: Layout) -> None:
    """``onnx-gate export`` with the cache, as a user runs it, in the repository."""
    repo = config.parent
    env = dict(os.environ)
    paths = [str(repo / p) for p in layout.pythonpath]
    env["PYTHONPATH"] = os.pathsep.join([*paths, env.get("PYTHONPATH", "")]).strip(os.pathsep)
    args = [sys.executable, "-m", "ci_onnx", "export", "--config", str(config)]
    args += ["--out", str(work / "out"), "--cache-dir", str(work / "cache")]
    done = subprocess.run(args, cwd=repo, env=env, capture_output=True, text=True, timeout=1800)
    if done.returncode not in (0, 1):  # 1: a check failed, the bundle is still written and cached
        raise RuntimeError(
            f"{layout.name}: onnx-gate export exited {done.returncode}:\n{done.stderr[-3000:]}"
        )


def decisions(config: Path, work: Path) -> dict[str, str]:
    """Model → "" where every job's entry would be reused, else why one would export again."""
    out: dict[str, str] = {}
    for cfg in cascade.load_all(config):
        why = ""
        for job in parent.candidates(cfg, onnx_opset(cfg)):
            key = cache_key.key_for(cfg, job, exclude=[work / "out", work / "cache"])
            if not cache.entry_dir(work / "cache", key).is_dir():
                why = why or "its key changed"
                continue
            why = why or cache.stale(work / "cache", key, record.repository_of(cfg.root))
        out[cfg.model.id or cfg.model.name] = why
    return out


def recorded(work: Path, repo: Path) -> dict[str, str]:
    """Every file of the repository that an entry's record names → the model that read it."""
    import json

    names: dict[str, str] = {}
    for entry in cache.entries(work / "cache"):
        meta = json.loads((entry / cache.ENTRY).read_text())
        read = record.Record.from_json(meta.get("record"))
        model = meta["material"]["model"].get("name", "")
        names |= {n: model for n in (read.files if read else {}) if not Path(n).is_absolute()}
    return {n: m for n, m in sorted(names.items()) if (repo / n).is_file()}


def mutate(repo: Path, name: str) -> Callable[[], None]:
    """Apply one mutation; returns what undoes it."""
    if name == BUMP:
        layouts.bump(repo, "1.1")
        importlib.invalidate_caches()
        return lambda: (layouts.bump(repo, "1.0"), importlib.invalidate_caches())  # type: ignore[func-returns-value]
    path = repo / name
    before = path.read_bytes()
    if path.suffix == ".onnx":  # still a model: its doc string edited, its external data kept
        import onnx

        proto = onnx.load(path, load_external_data=False)
        proto.doc_string += "mutated"
        onnx.save(proto, path)
    elif b"\0" in before:  # a binary file: one bit of its last byte flipped
        path.write_bytes(before[:-1] + bytes([before[-1] ^ 1]))
    else:
        path.write_bytes(before + b"\n# mutated\n")
    return lambda: path.write_bytes(before)


def run_layout(layout: Layout, work: Path) -> Outcome:
    repo = work / "repo"
    config = layouts.make(repo, layout)
    export(config, work, layout)
    sys.path[:0] = [str(repo / p) for p in layout.pythonpath]  # as the export saw the environment
    importlib.invalidate_caches()
    try:
        fresh = decisions(config, work)
        if any(fresh.values()):
            raise RuntimeError(f"{layout.name}: a fresh export is not reused: {fresh}")
        seen = recorded(work, repo)
        owners = {**seen, **layout.owner}
        reads = list(dict.fromkeys([*layout.read, *seen]))
        killed, reused, missed, reasons = 0, 0, [], []
        started = time.perf_counter()
        for name in reads:
            undo = mutate(repo, name)
            found = decisions(config, work)
            undo()
            owner = owners.get(name) if len(found) > 1 else None
            mine = found[owner] if owner else next(iter(found.values()))
            others = [m for m, why in found.items() if owner and m != owner and why]
            if mine and not others:
                killed += 1
                reasons.append(f"{name}: {mine}")
            else:
                missed.append(f"read {name}: " + ("reused" if not mine else f"also re-exported {others}"))
        for name in layout.unread:
            undo = mutate(repo, name)
            found = decisions(config, work)
            undo()
            if any(found.values()):
                missed.append(f"unread {name}: {found}")
            else:
                reused += 1
        elapsed = time.perf_counter() - started
    finally:
        del sys.path[: len(layout.pythonpath)]
    return Outcome(
        layout.name, len(reads), killed, len(layout.unread), reused, tuple(missed), tuple(reasons), elapsed
    )


def table(outcomes: Sequence[Outcome]) -> str:
    rows = [
        ("layout", "read inputs mutated", "re-exported", "kill rate", "unread edits", "reused", "reuse rate")
    ]
    for o in outcomes:
        rows.append(
            (
                o.layout,
                str(o.read),
                str(o.killed),
                f"{o.kill_rate:.0%}",
                str(o.unread),
                str(o.reused),
                f"{o.reuse_rate:.0%}",
            )
        )
    read, killed = sum(o.read for o in outcomes), sum(o.killed for o in outcomes)
    unread, reused = sum(o.unread for o in outcomes), sum(o.reused for o in outcomes)
    rows.append(
        (
            "all",
            str(read),
            str(killed),
            f"{killed / read:.0%}",
            str(unread),
            str(reused),
            f"{reused / unread:.0%}",
        )
    )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [" | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.reuse.mutations")
    parser.add_argument("--only", default="", help="Run the layouts whose name contains this.")
    parser.add_argument("--keep", type=Path, help="Build the repositories here and keep them.")
    args = parser.parse_args(argv)
    chosen = [layout for layout in layouts.every() if args.only in layout.name]
    outcomes = []
    with tempfile.TemporaryDirectory() as tmp:
        base = args.keep or Path(tmp)
        for n, layout in enumerate(chosen):
            started = time.perf_counter()
            outcome = run_layout(layout, base / f"{n}")
            outcomes.append(outcome)
            print(
                f"{layout.name}: exported and mutated in {time.perf_counter() - started:.1f} s",
                file=sys.stderr,
            )
    print(table(outcomes))
    for o in outcomes:
        for line in o.reasons:
            print(f"  {o.layout}: re-exported: {line}")
        for line in o.missed:
            print(f"  {o.layout}: MISSED {line}")
    return 0 if all(not o.missed for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
