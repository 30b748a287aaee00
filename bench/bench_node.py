"""The node runner against a bare node script doing the same work, as a ratio of medians.

    python -m bench.bench_node [--runs N] [--release 1.24.1] [--work DIR]

Cases, interleaved (A, B, C, A, B, C …) after one warm-up round, on the example CNN's op17-dynamo
bundle (made once with the real `onnx-gate export`):
- bare node script (the baseline): bench/bare_node.mjs, the observer's work with nothing written;
- the node observer alone: `node ci_onnx/runners/node/observe.mjs …` (what verify launches);
- `onnx-gate verify --target node-ort<release>-cpu-op17-dynamo`: the whole stage (sha256 of the
  bundle, the child, output files, the observation, the placement, the judge, JSON and JUnit).
The onnxruntime-node install is provisioned once, untimed, by the runner's own provisioning.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from bench import common, harness
from ci_onnx.contracts import tensorproto
from ci_onnx.contracts.bundle import read_manifest

ROOT = Path(__file__).resolve().parent.parent
BARE = Path(__file__).resolve().parent / "bare_node.mjs"
BARE_CASE, OBSERVER, VERIFY = "bare node script", "node observer alone", "onnx-gate verify (node)"
TYPES = {tensorproto.FLOAT: "float32", tensorproto.INT64: "int64", tensorproto.INT32: "int32"}


def bundle(work: Path) -> Path:
    out = work / "bundles"
    b = out / "op17-dynamo"
    if not (b / "manifest.json").is_file():
        cfg = ROOT / "examples" / "tinycnn" / "onnx-gate.yml"
        common.check_call(
            [
                sys.executable,
                "-m",
                "ci_onnx",
                "export",
                "--config",
                str(cfg),
                "--only",
                "op17-dynamo",
                "--out",
                str(out),
            ]
        )
    return b


def bare_spec(b: Path, home: Path) -> Path:
    """Raw copies of the bundle's inputs and references, and what the bare script needs to know."""
    m = read_manifest(b)
    home.mkdir(parents=True, exist_ok=True)

    def raw(path: Path, name: str, dest: str) -> dict[str, object]:
        t = tensorproto.load_tensor(path)
        (home / dest).write_bytes(t.array.tobytes())
        return {"name": name, "type": TYPES[t.data_type], "dims": list(t.array.shape), "file": dest}

    data_sets = [
        {
            "inputs": [
                raw(b / ds.directory / f"input_{i}.pb", s.name, f"{ds.directory}-in{i}.bin")
                for i, s in enumerate(m.inputs)
            ],
            "outputs": [
                raw(b / ds.directory / f"output_{i}.pb", s.name, f"{ds.directory}-out{i}.bin")
                for i, s in enumerate(m.outputs)
            ],
        }
        for ds in m.test_data_sets
    ]
    spec = {
        "model": str(b / "model.onnx"),
        "data_sets": data_sets,
        "batch_sizes": sorted(m.batch_sizes),
        "atol": m.tolerance.atol,
        "rtol": m.tolerance.rtol,
        "decision": m.decision.output if m.decision else "",
    }
    (home / "spec.json").write_text(json.dumps(spec))
    return home / "spec.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_node", description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--release", default="1.24.1")
    parser.add_argument("--work", type=Path, default=Path(__file__).resolve().parent / ".work" / "node")
    args = parser.parse_args(argv)
    from ci_onnx.contracts import proc
    from ci_onnx.contracts.target import Target
    from ci_onnx.runners import base, node

    work = args.work.resolve()
    b = bundle(work)
    target = Target(args.release, "cpu", 17, "dynamo", runner="node")
    env = base.provision(target, base.Provisioning(work / "cache", proc.child_environment(os.environ)))
    spec = bare_spec(b, work / "bare")
    sizes = ",".join(str(n) for n in sorted(read_manifest(b).batch_sizes))
    runs = str(common.LATENCY_RUNS)
    cases: dict[str, harness.Case] = {
        BARE_CASE: [env.program, str(BARE), str(node.module_dir(env)), str(spec), runs],
        OBSERVER: [
            env.program,
            str(node.OBSERVER),
            "--module",
            str(node.module_dir(env)),
            "--bundle",
            str(b),
            "--target-id",
            target.id,
            "--ep",
            "cpu",
            "--out",
            str(work / "obs"),
            "--latency-runs",
            runs,
            "--batch-sizes",
            sizes,
        ],
        VERIFY: harness.Command(
            (
                sys.executable,
                "-m",
                "ci_onnx",
                "verify",
                "--bundle",
                str(b),
                "--target",
                target.id,
                "--out",
                str(work / "out"),
            ),
            env={"ONNX_GATE_CACHE": str(work / "cache")},
        ),
    }
    timings = harness.interleaved(cases, runs=args.runs, env={"PYTHONPATH": str(ROOT)})
    print(
        f"node runner vs a bare node script, onnxruntime-node {args.release}, example CNN, {args.runs} runs\n"
    )
    print(harness.table(timings, BARE_CASE, names=[BARE_CASE, OBSERVER, VERIFY]))
    verify_ratio = harness.ratio(timings, VERIFY, BARE_CASE)
    print(f"\nratio, onnx-gate verify (node) / bare node script: {verify_ratio:.2f}×")
    print(
        f"ratio, node observer alone / bare node script: {harness.ratio(timings, OBSERVER, BARE_CASE):.2f}×"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
