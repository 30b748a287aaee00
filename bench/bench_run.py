"""Measure 5: a first `onnx-gate run` (fresh environment cache) against a second one reusing it.

One target (tinycnn, onnxruntime pinned, CPU, op17 dynamo). Each round: a first run with a fresh
--cache-dir (and, for the cold case, an empty UV_CACHE_DIR, so uv downloads the wheels again), then
a second run with the same cache. The run prints its own split (export s, verify s, environments
created), which is read back. The environments are made while the bundles export, so what their
creation costs is the first run's wall time less the second's: the part the export did not hide.
"""

from __future__ import annotations

import re
import shutil
import statistics
import time
from pathlib import Path

from bench import common, harness
from bench.bench_startup import small_config

SPLIT = re.compile(r"timings: export ([\d.]+) s, verify ([\d.]+) s \((\d+) environment")


def _config(work: Path, ort_version: str) -> Path:
    text = small_config(work).read_text()
    text = text.replace('runtimes: ["1.20.1", "1.24.1", "1.32.0"]', f'runtimes: ["{ort_version}"]')
    text = text.replace("providers: [cpu, openvino]", "providers: [cpu]")
    text = text.replace("opsets: [17, 18]", "opsets: [17]").replace(
        "exporters: [dynamo, torchscript]", "exporters: [dynamo]"
    )
    path = work / "run" / "onnx-gate.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _run(cfg: Path, out: Path, cache: Path, extra_env: dict[str, str]) -> tuple[float, float, float, int]:
    shutil.rmtree(out, ignore_errors=True)
    start = time.perf_counter()
    done = common.output(
        [
            common.onnx_gate(),
            "run",
            "--config",
            str(cfg),
            "--out",
            str(out),
            "--cache-dir",
            str(cache),
            "--no-cache",
        ],
        env=extra_env,
    )
    wall = time.perf_counter() - start
    found = SPLIT.search(done.stdout)
    if done.returncode not in (0, 1) or not found:
        raise harness.CaseFailed(
            f"onnx-gate run exited {done.returncode}: {(done.stdout + done.stderr)[-2000:]}"
        )
    return wall, float(found.group(1)), float(found.group(2)), int(found.group(3))


def measure(work: Path, ort_version: str, runs: int) -> list[harness.Section]:
    cfg = _config(work, ort_version)
    home = work / "run"
    rows: dict[str, list[tuple[float, float, float, int]]] = {
        "first run, cold uv cache": [], "first run, warm uv cache": [], "second run (environments reused)": []
    }  # fmt: skip
    for i in range(runs):
        for cold in (True, False):
            cache = home / f"cache-{i}-{cold}"
            shutil.rmtree(cache, ignore_errors=True)
            env = {"UV_CACHE_DIR": str(home / f"uv-{i}")} if cold else {}
            if cold:
                shutil.rmtree(home / f"uv-{i}", ignore_errors=True)
            key = "first run, cold uv cache" if cold else "first run, warm uv cache"
            rows[key].append(_run(cfg, home / "out", cache, env))
            if not cold:
                rows["second run (environments reused)"].append(_run(cfg, home / "out", cache, {}))
            shutil.rmtree(cache, ignore_errors=True)
        shutil.rmtree(home / f"uv-{i}", ignore_errors=True)
    timings = {k: harness.Timing(k, tuple(r[0] for r in v)) for k, v in rows.items()}
    base = "second run (environments reused)"
    split = [
        "| case | export, environments made meanwhile (median) | verify (median) | environments created |",
        "|---|---|---|---|",
    ]
    for k, v in rows.items():
        split.append(
            f"| {k} | {statistics.median(r[1] for r in v):.1f} s | "
            f"{statistics.median(r[2] for r in v):.1f} s | {v[0][3]} |"
        )
    second = timings[base].median

    def env_s(key: str) -> float:
        return timings[key].median - second

    body = (
        harness.table(timings, base)
        + "\n\n"
        + "\n".join(split)
        + "\n\nThe environments are made while the bundles export, so their creation costs the first "
        f"run what the export does not hide: {env_s('first run, warm uv cache'):.1f} s of wall time "
        f"with uv's download cache warm and {env_s('first run, cold uv cache'):.1f} s with it empty "
        "(onnxruntime and numpy wheels fetched from the package index this machine reaches). Both runs "
        "export again (`--no-cache`: this measures environments; bench_export_cache.py measures reused "
        "bundles), so the export with torch is most of a local run."
    )
    return [harness.Section("5. Local run: first against second", body)]
