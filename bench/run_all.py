"""Run the benchmarks, print the tables and write bench/RESULTS.md.

    python -m bench.run_all [--runs N] [--only verify,startup,report,run,footprint] [--work DIR]

Every figure is a median of N interleaved runs, compared with a baseline measured in the same loop.
The work directory keeps the bundles (made once with `onnx-gate export`) and the environments between
invocations; delete it to start from nothing.
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time
from pathlib import Path

from bench import common, harness

HERE = Path(__file__).resolve().parent
MEASURES = ("verify", "startup", "report", "run", "footprint")
START, END = "<!-- results:start -->", "<!-- results:end -->"


def splice(readme: str, results: str) -> str:
    """``readme`` with the text between the results markers replaced by ``results``."""
    head, found, rest = readme.partition(START)
    _, found_end, tail = rest.partition(END)
    if not found or not found_end:
        raise ValueError(f"the README has no {START} … {END} block to put the results in")
    return f"{head}{START}\n{results.strip()}\n{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run_all", description=__doc__)
    parser.add_argument("--runs", type=int, default=5, help="Timed runs per case (after one warm-up).")
    parser.add_argument(
        "--run-rounds", type=int, default=3, help="Rounds of measure 5 (each runs 3 `onnx-gate run`s)."
    )
    parser.add_argument(
        "--only", default=",".join(MEASURES), help=f"Comma-separated subset of {', '.join(MEASURES)}."
    )
    parser.add_argument("--work", type=Path, default=HERE / ".work", help="Bundles, environments, outputs.")
    parser.add_argument("--models", default="tinycnn,minilm", help="Models of measures 1 and 2.")
    parser.add_argument("--ort", default="1.32.0", help="The onnxruntime release of the verify environment.")
    parser.add_argument("--out", type=Path, default=HERE / "RESULTS.md")
    parser.add_argument(
        "--readme", type=Path, default=HERE / "README.md", help="Also put the results in it ('' for no)."
    )
    args = parser.parse_args(argv)
    chosen = [m.strip() for m in args.only.split(",") if m.strip()]
    unknown = set(chosen) - set(MEASURES)
    if unknown:
        parser.error(f"--only: unknown {', '.join(sorted(unknown))}; choose from {', '.join(MEASURES)}")
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    sections: list[harness.Section] = []
    started = time.perf_counter()

    def done(new: list[harness.Section]) -> None:
        for s in new:
            print(s.markdown(), flush=True)
        sections.extend(new)

    if "verify" in chosen:
        from bench import bench_verify, prepare
        from ci_onnx.host import envs

        runtime = envs.ensure("onnxruntime", args.ort, work / "cache", uv=envs.find_uv())
        makers = {"tinycnn": prepare.tinycnn, "minilm": prepare.minilm}
        names = [m.strip() for m in args.models.split(",") if m.strip()]
        if set(names) - set(makers):
            parser.error(f"--models: choose from {', '.join(makers)}")
        models = [makers[m](work) for m in names]
        done(bench_verify.measure(models, str(runtime.python), work, args.runs))
    if "startup" in chosen:
        from bench import bench_startup

        done(bench_startup.measure(work, max(args.runs, 10)))
    if "report" in chosen:
        from bench import bench_report

        done(bench_report.measure(work, args.runs))
    if "run" in chosen:
        from bench import bench_run

        done(bench_run.measure(work, args.ort, args.run_rounds))
    if "footprint" in chosen:
        from bench import bench_footprint

        done(bench_footprint.measure(work, args.ort))
    header = [
        "# onnx-gate benchmarks: latest results",
        "",
        f"Measured {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC "
        f"in {time.perf_counter() - started:.0f} s with",
        f"`python -m bench.run_all --runs {args.runs} --run-rounds {args.run_rounds} "
        f"--only {','.join(chosen)} --models {args.models}`.",
        "",
        *common.machine_lines(),
        "",
    ]
    text = "\n".join(header) + "\n" + "\n".join(s.markdown() for s in sections)
    args.out.write_text(text)
    if str(args.readme) and args.readme.is_file():
        body = text.replace("# onnx-gate benchmarks: latest results", "", 1)
        body = body.replace("\n### ", "\n#### ").replace("\n## ", "\n### ")
        args.readme.write_text(splice(args.readme.read_text(), body))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
