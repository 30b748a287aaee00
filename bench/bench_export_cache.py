"""The export cache: a first warm `onnx-gate run` of the demo against a second run that reuses its bundles.

``python -m bench.bench_export_cache [--runs 3] [--cache-dir DIR] [--jobs N]`` runs the demo (the
bundled example with the demo matrix: no onnx-gate.yml in the working directory) in turn:

- **first warm run**: ``onnx-gate run --no-cache``: every environment is ready in the cache, every
  bundle is exported (what a first run costs once the environments exist);
- **second run**: ``onnx-gate run``: the export cache holds every bundle, nothing is exported.

One warm-up round creates the environments and fills the export cache. Each figure is the median of
the interleaved runs; the ratio is first / second, measured in the same loop. The run's own split
(export s, verify s) is read back from its output. Writes the table to bench/EXPORT_CACHE.md.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench import common, harness

SPLIT = re.compile(r"timings: export ([\d.]+) s, verify ([\d.]+) s")
REUSED = re.compile(r"reused from cache [0-9a-f]{12}, nothing exported")
EXPORTING = "exporting…"
TARGET = 3.0
OUT = Path(__file__).parent / "EXPORT_CACHE.md"


def _run(home: Path, cache: Path, jobs: int, *extra: str) -> tuple[float, float, float, int, int]:
    """One demo run: wall s, export s, verify s, bundles exported, bundles reused."""
    argv = [
        common.onnx_gate(),
        "run",
        "--out",
        str(home / "out"),
        "--cache-dir",
        str(cache),
        "--jobs",
        str(jobs),
    ]
    start = time.perf_counter()
    done = subprocess.run(
        [*argv, *extra], cwd=home, env=common.child_env(), capture_output=True, text=True, check=False
    )  # in ``home``: no onnx-gate.yml there, so the demo matrix
    wall = time.perf_counter() - start
    found = SPLIT.search(done.stdout)
    if done.returncode != 0 or not found:
        raise harness.CaseFailed(
            f"onnx-gate run exited {done.returncode}: {(done.stdout + done.stderr)[-2000:]}"
        )
    exported = done.stdout.count(EXPORTING)
    reused = len(REUSED.findall(done.stdout))
    return wall, float(found.group(1)), float(found.group(2)), exported, reused


def measure(home: Path, cache: Path, runs: int, jobs: int) -> str:
    home.mkdir(parents=True, exist_ok=True)
    cases = {"first warm run (--no-cache)": ("--no-cache",), "second run (bundles from the cache)": ()}
    _run(home, cache, jobs)  # warm-up: environments created, export cache filled
    for extra in cases.values():
        _run(home, cache, jobs, *extra)
    rows: dict[str, list[tuple[float, float, float, int, int]]] = {k: [] for k in cases}
    for _ in range(runs):
        for name, extra in cases.items():
            rows[name].append(_run(home, cache, jobs, *extra))
    timings = {k: harness.Timing(k, tuple(r[0] for r in v)) for k, v in rows.items()}
    first, second = list(cases)
    ratio = harness.ratio(timings, first, second)
    split = [
        "| case | export (median) | verify (median) | bundles exported | bundles reused |",
        "|---|---|---|---|---|",
    ]
    for k, v in rows.items():
        split.append(
            f"| {k} | {statistics.median(r[1] for r in v):.1f} s | "
            f"{statistics.median(r[2] for r in v):.1f} s | {v[-1][3]} | {v[-1][4]} |"
        )
    return "\n".join(
        [
            "# Export cache: a second `onnx-gate run` of the demo",
            "",
            "Written by `python -m bench.bench_export_cache` "
            f"(`--runs {runs} --jobs {jobs}`, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}). "
            "The demo: the bundled example with the demo matrix (four exports: opsets 17 and 21 × dynamo "
            "and torchscript; twelve targets). Both cases find every environment ready; the first exports "
            "every bundle (`--no-cache`), the second finds them all in the export cache and verifies the "
            "same targets. Wall time of the whole command (plan, export, verify, report), medians of "
            "interleaved runs, the second run as the baseline:",
            "",
            harness.table(timings, second, names=[first, second]),
            "",
            "The run's own split (read from its `== timings` line):",
            "",
            *split,
            "",
            harness.verdict(
                ratio >= TARGET, f"the first warm run takes {ratio:.2f}× the second", f"≥ {TARGET:.0f}×"
            ),
            "",
            "What is left in the second run is the verify stage (each target's runner process, now with its "
            "cold start in a fresh process) and the plan and report; hashing the factory's files and "
            "checking every cached file against its sha256 is part of its export figure.",
            "",
            "Measured on:",
            "",
            *common.machine_lines(),
            "",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_export_cache", description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--work", type=Path, default=Path(__file__).parent / ".work" / "export-cache")
    parser.add_argument(
        "--cache-dir", type=Path, help="Environments and the export cache (default: under --work)."
    )
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    text = measure(args.work, args.cache_dir or args.work / "cache", args.runs, args.jobs)
    args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
