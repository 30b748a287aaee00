"""Measures 1 and 2: `onnx-gate verify` against a bare script doing the same work, and against Polygraphy.

All cases of one model run interleaved in one loop, so the two tables share their measurements:
- bare script, full work (the baseline of measure 1): bench/bare_verify.py, the runner's and the
  judge's work with nothing written;
- bare script, parity only: one session, every data set once, the same comparisons and decisions;
- the runner alone (`python -m ci_onnx.observer.ort`): verify without the parent process and the judge;
- `onnx-gate verify` (the full stage);
- `onnx-gate verify, parity only`: the full stage on a copy of the bundle that serves no batch sizes,
  so it checks parity, decisions and placement, with no batch, latency or memory work;
- `polygraphy run model.onnx --onnxrt --load-inputs … --load-outputs … --atol … --rtol …` (the
  baseline of measure 2): the same feeds, the same references, the same tolerances, run from an
  environment with the same onnxruntime and no torch (Polygraphy imports torch whenever it can).
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from bench import common, harness, prepare

BARE = Path(__file__).resolve().parent / "bare_verify.py"
FULL, PARITY, RUNNER, VERIFY, LEAN, POLY = (
    "bare script, full work",
    "bare script, parity only",
    "runner alone",
    "onnx-gate verify",
    "onnx-gate verify, parity only",
    "polygraphy run --onnxrt",
)


def polygraphy_env(work: Path, ort_version: str) -> Path:
    """Polygraphy with the same onnxruntime and no torch: Polygraphy imports torch whenever it is
    installed (1.7 s of its 2.1 s on the CNN in the dev venv), which a parity job would not have."""
    from ci_onnx.host import envs

    version = common.version("polygraphy")
    spec = f"polygraphy=={version}" if version != "not installed" else "polygraphy"
    reqs = [spec, f"onnxruntime=={ort_version}", "numpy", f"onnx=={common.version('onnx')}"]
    return common.venv(work / f"venv-polygraphy-ort{ort_version}", reqs, envs.find_uv())


def cases(p: prepare.Prepared, python: str, work: Path, phases: Path) -> dict[str, harness.Case]:
    from ci_onnx.contracts import serde
    from ci_onnx.contracts.target import Target

    ort_version = common.output(
        [python, "-c", "import onnxruntime; print(onnxruntime.__version__)"]
    ).stdout.strip()
    target = Target.from_id(p.target.format(ort=ort_version))
    poly = str(polygraphy_env(work.parent, ort_version) / "bin" / "polygraphy")
    return {
        FULL: harness.Command((python, str(BARE), str(p.spec), "--phases", str(phases))),
        PARITY: harness.Command((python, str(BARE), str(p.spec), "--parity-only")),
        RUNNER: harness.Command(
            (
                python,
                "-m",
                "ci_onnx.observer.ort",
                "--bundle",
                str(p.bundle),
                "--target-json",
                json.dumps(serde.to_json(target)),
                "--ep",
                "CPUExecutionProvider",
                "--out",
                str(work / "runner-out"),
                "--latency-runs",
                str(common.LATENCY_RUNS),
            ),
            env={"PYTHONPATH": str(prepare.ROOT)},
        ),
        VERIFY: harness.Command(
            (
                common.onnx_gate(),
                "verify",
                "--bundle",
                str(p.bundle),
                "--target",
                target.id,
                "--out",
                str(work / "verify-out"),
                "--python",
                python,
            )
        ),
        LEAN: harness.Command(
            (
                common.onnx_gate(),
                "verify",
                "--bundle",
                str(p.lean_bundle),
                "--target",
                target.id,
                "--out",
                str(work / "lean-out"),
                "--python",
                python,
            )
        ),
        POLY: harness.Command(
            (
                poly,
                "run",
                str(p.bundle / "model.onnx"),
                "--onnxrt",
                "--load-inputs",
                str(p.poly_inputs),
                "--load-outputs",
                str(p.poly_reference),
                "--atol",
                repr(p.atol),
                "--rtol",
                repr(p.rtol),
            )
        ),
    }


def measure(models: list[prepare.Prepared], python: str, work: Path, runs: int) -> list[harness.Section]:
    overhead, against = [], []
    for p in models:
        phases = work / "out" / "bare-phases.jsonl"
        phases.parent.mkdir(parents=True, exist_ok=True)
        phases.unlink(missing_ok=True)
        timings = harness.interleaved(cases(p, python, work / "out", phases), runs=runs)
        parts = breakdown(phases, timings[FULL].median, warmup=1)
        r = harness.ratio(timings, VERIFY, FULL)
        overhead.append(
            f"### {p.name}\n\n"
            + harness.table(timings, FULL, names=[FULL, RUNNER, VERIFY, PARITY, LEAN])
            + "\n\n"
            + harness.verdict(r <= 1.2, f"verify takes {r:.2f}× the bare script", "≤ 1.2×")
            + "\n\nWhat each part of the work costs (the bare script's phases, medians):\n\n"
            + parts
        )
        rp = harness.ratio(timings, VERIFY, POLY)
        rl = harness.ratio(timings, LEAN, POLY)
        rb = harness.ratio(timings, PARITY, POLY)
        against.append(
            f"### {p.name}\n\n"
            + harness.table(timings, POLY, names=[POLY, LEAN, VERIFY, PARITY])
            + "\n\n"
            + harness.verdict(
                rl < 1.0,
                f"on the same check onnx-gate verify takes {rl:.2f}× Polygraphy's time "
                f"(the full verify: {rp:.2f}×; a bare parity script: {rb:.2f}×)",
                "onnx-gate faster",
            )
        )
    return [
        harness.Section("1. Verify overhead against a bare script", "\n\n".join(overhead)),
        harness.Section("2. Against Polygraphy", "\n\n".join(against)),
    ]


PHASES = {
    "interpreter start and exit": "",
    "imports": "import numpy, onnxruntime",
    "session": "create the session",
    "parity": "every data set once, compared (all Polygraphy does)",
    "batch": "single runs, each batch size, compared",
    "placement": "the parity runs' profile ended and read (profiling is on from the session's start)",
    "latency": f"3 warm-up + {common.LATENCY_RUNS} timed runs per batch size",
    "memory": "4 threads serving the largest batch, RSS sampled",
}


def breakdown(phases: Path, total_s: float, *, warmup: int) -> str:
    """Median seconds of each phase over the timed runs; the rest of the wall time is the interpreter."""
    rows = [json.loads(line) for line in phases.read_text().splitlines()[warmup:]]
    medians = {name: statistics.median(r[name] for r in rows) for name in rows[0]}
    medians = {"interpreter start and exit": max(0.0, total_s - sum(medians.values())), **medians}
    lines = ["| part | what | median | share |", "|---|---|---|---|"]
    for name, seconds in medians.items():
        lines.append(
            f"| {name} | {PHASES.get(name, '')} | {seconds * 1000:.0f} ms | {seconds / total_s:.0%} |"
        )
    return "\n".join(lines)
