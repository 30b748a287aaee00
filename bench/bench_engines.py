"""How far OpenVINO's own runtime and tract agree with onnxruntime: on DigitNet, and on ONNX's backend
node tests.

    python -m bench.bench_engines [--run-out DIR] [--cache DIR] [--envs DIR] [--only GLOB]
                                  [--table bench/ENGINES.md]

- ``--run-out DIR``: the out directory of ``onnx-gate run`` with ``runners: [python, openvino, tract]``
  (tests/e2e/test_engines_runner.py's config): each engine cell's observed outputs against the python
  cell's, element by element, per test data set; and what each cell's own checks said.
- The node cases (model.onnx + test_data_set_N/, from the onnx 1.22 wheel, tests/corpus/backend.py)
  run on onnxruntime CPU (the corpus's ground truth) and, in each engine's environment as its runner
  kind provisions it (the latest release on the package index), by bench/engine_corpus_child.py: the
  same rule, onnx's backend runner's (assert_allclose at the case's rtol/atol). OpenVINO is run with
  INFERENCE_PRECISION_HINT f32 there (the op, not the bf16 default, is what a node case tests). A
  crash or a hang of the engine is that case's verdict, and the child goes on after it.

It prints the tables and writes them to ``--table``.
"""

from __future__ import annotations

import argparse
import collections
import fnmatch
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ENGINES = ("openvino", "tract")
CASE_TIMEOUT_S = 60.0
HERE = Path(__file__).resolve().parent


def provision(kind: str, envs: Path) -> tuple[str, str]:
    """The engine's latest release and its environment's python, as its runner kind makes it."""
    from ci_onnx import matrix
    from ci_onnx.contracts import proc
    from ci_onnx.host import envs as envs_mod
    from ci_onnx.host.resolve import PipIndex, resolve
    from ci_onnx.runners import base

    release = resolve("latest", matrix.runners()[kind].index_name("cpu"), PipIndex())
    how = base.Provisioning(envs, proc.child_environment(os.environ), uv=envs_mod.find_uv())
    return release, base.get(kind).provision(release, "cpu", how).program


def run_engine(kind: str, python: str, cases: list[Path]) -> dict[str, dict[str, Any]]:
    """Every case's verdict on ``kind``: the child's, or ``crash``/``hang`` where it died on it."""
    done: dict[str, dict[str, Any]] = {}
    env = {**os.environ, "PYTHONPATH": str(HERE.parent)}
    left = list(cases)
    while left:
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as fh:
            fh.write("\n".join(f"{c}\t{','.join(input_names(c))}" for c in left))
        child = subprocess.Popen(
            [python, str(HERE / "engine_corpus_child.py"), kind, fh.name],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
        )  # fmt: skip
        try:
            current, hung = _read(child, done)
        finally:
            child.kill()
            child.wait()
            Path(fh.name).unlink()
        if current:  # the child died on this case, or hung on it: its verdict, then the rest
            why = (
                f"no answer in {CASE_TIMEOUT_S:.0f} s" if hung else f"the process ended ({child.returncode})"
            )
            done[current] = {"case": current, "status": "hang" if hung else "crash", "why": why}
        left = [c for c in left if c.name not in done]
    return done


def input_names(case: Path) -> list[str]:
    """The graph's inputs that are not initializers, in order (what input_<i>.pb feeds)."""
    import onnx

    graph = onnx.load(str(case / "model.onnx"), load_external_data=False).graph
    weights = {i.name for i in graph.initializer}
    return [i.name for i in graph.input if i.name not in weights]


def _read(child: subprocess.Popen[str], done: dict[str, dict[str, Any]]) -> tuple[str, bool]:
    """The child's verdicts into ``done``; the case it was on when it ended (or '') and whether it hung."""
    import selectors

    assert child.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(child.stdout, selectors.EVENT_READ)
    current, since = "", time.monotonic()
    while True:
        if not sel.select(timeout=1.0):
            if current and time.monotonic() - since > CASE_TIMEOUT_S:
                return current, True
            continue
        line = child.stdout.readline()
        if not line:
            return current, False
        if line.startswith("START "):
            current, since = line[6:].strip(), time.monotonic()
        else:
            row = json.loads(line)
            done[row["case"]] = row
            current = ""


def digitnet(run_out: Path) -> list[str]:
    """Each engine cell's outputs against the python cell's, per test data set, from an
    ``onnx-gate run`` out directory."""
    from ci_onnx.contracts import tensorproto

    results = {p.stem: json.loads(p.read_text()) for p in (run_out / "results").glob("*.json")}
    python = next(i for i, r in results.items() if r["target"]["runner"] == "python")
    sets = sorted(d.name for d in (run_out / "observations" / python).glob("test_data_set_*"))
    lines = [
        f"max abs difference from `{python}`'s outputs, per test data set; the cell's own checks; its"
        " cold start, one fresh process each while the run verified two cells at a time (one sample:"
        " an order of size, not a comparison; bench/NOISE.md on this machine's noise).",
        "",
        f"| cell | {' | '.join(sets)} | parity (vs PyTorch) | engine-precision "
        "| INFERENCE_PRECISION_HINT taken | cold start ms (import, session) |",
        "|---|" + "---:|" * len(sets) + "---|---|---|---:|",
    ]
    for cell, r in sorted(results.items(), key=lambda kv: kv[0] != python):
        worst = []
        for ds in sets:
            w = 0.0
            for ref_file in (run_out / "observations" / python / ds).glob("output_*.pb"):
                ref = tensorproto.load(ref_file)[1].astype(np.float64)
                got = tensorproto.load(run_out / "observations" / cell / ds / ref_file.name)[1].astype(
                    np.float64
                )
                w = max(w, float(np.max(np.abs(got - ref))))
            worst.append(f"{w:.2g}")
        checks = {c["name"]: c for c in r["checks"]}
        parity = next(c for n, c in checks.items() if n.startswith("parity["))
        precision = checks.get("engine-precision")
        took = (
            precision["figures"]["effective"].get("INFERENCE_PRECISION_HINT", "") if precision else "(none)"
        )
        lines.append(
            f"| `{cell}` | {' | '.join(worst)} "
            f"| {parity['status']}, max abs {parity['figures']['max_abs']:.2g} | "
            f"{precision['status'] if precision else 'not observed'} | {took} | {cold(r)} |"
        )
    return lines


def cold(result: dict[str, Any]) -> str:
    s = (result.get("observation") or {}).get("serving") or {}
    if not s.get("cold_start_ms"):
        return "not measured"
    return f"{s['cold_start_ms']:.0f} ({s['import_ms']:.0f}, {s['session_ms']:.0f})"


def corpus(cases: list[Path], envs: Path) -> tuple[list[str], dict[str, Any]]:
    from tests.corpus import backend

    t0 = time.monotonic()
    truth = {c.name: backend.ground_truth(c) for c in cases}
    seconds = {"onnxruntime": time.monotonic() - t0}
    verdicts: dict[str, dict[str, dict[str, Any]]] = {}
    releases: dict[str, str] = {}
    for kind in ENGINES:
        releases[kind], python = provision(kind, envs)
        t0 = time.monotonic()
        verdicts[kind] = run_engine(kind, python, cases)
        seconds[kind] = time.monotonic() - t0
    import onnxruntime

    ort_pass = {n for n, (ok, _) in truth.items() if ok}
    lines = [
        f"{len(cases)} cases of onnx {backend.ONNX_WITH_DATA}'s node tests; "
        f"onnxruntime {onnxruntime.__version__}, "
        + ", ".join(f"{k} {releases[k]}" for k in ENGINES)
        + f"; seconds: {', '.join(f'{k} {v:.0f}' for k, v in seconds.items())}.",
        "",
        "| engine | skipped (not numpy tensors) | runs the case | passes | passes where onnxruntime passes | "
        "agrees with onnxruntime's verdict | passes, onnxruntime fails | refused at load | run failed | "
        "outputs differ | crash or hang |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for kind in ENGINES:
        rows = {n: v for n, v in verdicts[kind].items() if v["status"] != "skip"}
        status = collections.Counter(v["status"] for v in rows.values())
        passed = {n for n, v in rows.items() if v["status"] == "pass"}
        agree = sum((n in passed) == (n in ort_pass) for n in rows)
        both = f"{len(passed & ort_pass)} of {len(set(rows) & ort_pass)}"
        lines.append(
            f"| {kind} | {len(verdicts[kind]) - len(rows)} | {len(rows)} | {len(passed)} | {both} | "
            f"{agree} ({agree / max(1, len(rows)):.1%}) | {len(passed - ort_pass)} | {status['load']} | "
            f"{status['run']} | {status['compare']} | {status['crash'] + status['hang']} |"
        )
    lines += ["", "Where an engine fails a case onnxruntime passes, by op (the case name's first word):", ""]
    for kind in ENGINES:
        fails = [
            n for n, v in verdicts[kind].items() if v["status"] not in ("pass", "skip") and n in ort_pass
        ]
        ops = collections.Counter(n.removeprefix("test_").split("_")[0] for n in fails)
        top = ", ".join(f"{op} {k}" for op, k in ops.most_common(25))
        lines.append(f"- **{kind}** ({len(fails)}): {top}")
    return lines, {"truth": truth, "verdicts": verdicts}


def cpu_bf16() -> str:
    """Whether the CPU computes in bf16 (what OpenVINO's CPU plugin's default precision follows)."""
    try:
        flags = set(Path("/proc/cpuinfo").read_text().split())
    except OSError:
        return "bf16 support unknown"
    found = sorted(flags & {"avx512_bf16", "amx_bf16"})
    return f"bf16 in hardware ({', '.join(found)})" if found else "no bf16 in hardware"


def main(argv: list[str] | None = None) -> int:
    from tests.corpus import backend

    parser = argparse.ArgumentParser(prog="python -m bench.bench_engines", description=__doc__)
    parser.add_argument(
        "--run-out", type=Path, help="an `onnx-gate run` out directory (python, openvino, tract)"
    )
    parser.add_argument("--cache", type=Path, default=backend.DEFAULT_CACHE)
    parser.add_argument("--envs", type=Path, default=Path.home() / ".cache" / "onnx-gate")
    parser.add_argument("--only", action="append", default=[], help="glob(s) over case names")
    parser.add_argument("--no-corpus", action="store_true", help="DigitNet only")
    parser.add_argument("--table", type=Path)
    parser.add_argument("--json", type=Path, help="every case's verdicts")
    args = parser.parse_args(argv)
    out = [
        "# OpenVINO's runtime and tract beside onnxruntime",
        "",
        "Written by `python -m bench.bench_engines --run-out DIR --table bench/ENGINES.md`"
        " (bench/bench_engines.py says what each figure is), where DIR is the out directory of"
        " `onnx-gate run` on DigitNet with `runners: [python, openvino, tract]`"
        " (the config of tests/e2e/test_engines_runner.py). "
        f"This machine: {platform.machine()}, {os.cpu_count()} CPUs, {cpu_bf16()}.",
        "",
    ]
    if args.run_out:
        out += ["## DigitNet (the example), one `onnx-gate run`", "", *digitnet(args.run_out), ""]
    if not args.no_corpus:
        root = backend.node_cases(args.cache)
        cases = sorted(p for p in root.iterdir() if (p / "model.onnx").is_file())
        if args.only:
            cases = [c for c in cases if any(fnmatch.fnmatchcase(c.name, g) for g in args.only)]
        lines, raw = corpus(cases, args.envs)
        out += [
            "## ONNX backend node tests",
            "",
            "Each case as onnx's backend runner judges it (every output within the case's rtol/atol),"
            " on onnxruntime CPU (tests/corpus/backend.py's ground truth) and on each engine in its own"
            " environment (bench/engine_corpus_child.py), OpenVINO with INFERENCE_PRECISION_HINT f32;"
            " tract's input facts are the first test data set's shapes. A case whose tensors numpy has"
            " no type for (bfloat16, float8, 4-bit) or that holds sequences, maps or optionals is"
            " skipped for the engines. These are per-op figures, not the gate's: the gate adds its"
            " checks (load, parity against PyTorch, batch sizes, engine-precision) around the same runs.",
            "",
            *lines,
            "",
        ]
        if args.json:
            args.json.write_text(json.dumps(raw, indent=1, default=str))
    text = "\n".join(out)
    print(text)
    if args.table:
        from bench import bench_engines_corpus as real

        kept = real.section_of(args.table.read_text()) if args.table.is_file() else ""
        args.table.write_text(real.replace_section(text, kept.splitlines()) if kept else text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
