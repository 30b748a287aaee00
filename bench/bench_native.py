"""The native runner against a bare C program doing the same ONNX Runtime work, as a ratio of medians.

    python -m bench.bench_native [--runs N] [--release 1.29.0] [--work DIR]

Cases, interleaved (A, B, C, A, B, C …) after one warm-up round, on the example CNN's op17-dynamo
bundle (made once with the real `onnx-gate export`):
- bare C program (the baseline): bench/bare_native.c, the observer's runs with nothing read from
  TensorProto files, nothing written, no verbose session;
- the native observer alone: what verify launches (its TensorProto codec, output files, the profile,
  the verbose session, the observation);
- `onnx-gate verify --target native-ort<release>-cpu-op17-dynamo`: the whole stage (sha256 of the
  bundle, the child, the placement, the judge, JSON and JUnit).
The library and the observer are provisioned once, untimed, by the runner's own provisioning; the bare
program is compiled once with the same flags.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from bench import common, harness
from bench.bench_node import bundle
from ci_onnx.contracts import tensorproto
from ci_onnx.contracts.bundle import read_manifest

ROOT = Path(__file__).resolve().parent.parent
BARE_SOURCE = Path(__file__).resolve().parent / "bare_native.c"
BARE_CASE, OBSERVER, VERIFY = "bare C program", "native observer alone", "onnx-gate verify (native)"


def bare_spec(b: Path, home: Path) -> Path:
    """Raw copies of the bundle's inputs, and the text spec the bare program reads."""
    m = read_manifest(b)
    home.mkdir(parents=True, exist_ok=True)
    lines = ["sizes " + " ".join(str(n) for n in sorted(m.batch_sizes))]
    for ds in m.test_data_sets:
        lines.append("set")
        for i, s in enumerate(m.inputs):
            t = tensorproto.load_tensor(b / ds.directory / f"input_{i}.pb")
            raw = home / f"{ds.directory}-in{i}.bin"
            raw.write_bytes(t.array.tobytes())
            dims = " ".join(str(d) for d in t.array.shape)
            lines.append(f"input {s.name} {t.data_type} {t.array.ndim} {dims} {raw}")
    (home / "spec.txt").write_text("\n".join(lines) + "\n")
    return home / "spec.txt"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_native", description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--release", default="1.29.0")
    parser.add_argument("--work", type=Path, default=Path(__file__).resolve().parent / ".work" / "native")
    args = parser.parse_args(argv)
    from ci_onnx.contracts import proc
    from ci_onnx.contracts.target import Target
    from ci_onnx.runners import base, native

    work = args.work.resolve()
    b = bundle(work)
    target = Target(args.release, "cpu", 17, "dynamo", runner="native")
    how = base.Provisioning(work / "cache", proc.child_environment(os.environ))
    env = base.provision(target, how)
    bare = work / "bare_native"
    common.check_call(
        [
            native.compiler(how.environ),
            *native.BUILD_FLAGS,
            "-I",
            str(native.headers(how)),
            str(BARE_SOURCE),
            "-o",
            str(bare),
            *native.LINK_FLAGS,
        ]
    )
    spec = bare_spec(b, work / "bare")
    sizes = sorted(read_manifest(b).batch_sizes)
    runs = str(common.LATENCY_RUNS)
    from ci_onnx.contracts.verify_options import VerifyOptions

    observer = native.observer_argv(
        env.program,
        lib=str(env.path),
        bundle=str(b),
        out=str(work / "obs"),
        target=target,
        options=VerifyOptions(latency_runs=common.LATENCY_RUNS),
        batch_sizes=sizes,
    )
    cases: dict[str, harness.Case] = {
        BARE_CASE: [str(bare), str(env.path), str(b / "model.onnx"), str(spec), runs],
        OBSERVER: observer,
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
        f"native runner vs a bare C program, libonnxruntime {args.release}, example CNN, {args.runs} runs\n"
    )
    print(harness.table(timings, BARE_CASE, names=[BARE_CASE, OBSERVER, VERIFY]))
    verify_ratio = harness.ratio(timings, VERIFY, BARE_CASE)
    print(f"\nratio, onnx-gate verify (native) / bare C program: {verify_ratio:.2f}×")
    print(
        f"ratio, native observer alone / bare C program: {harness.ratio(timings, OBSERVER, BARE_CASE):.2f}×"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
