"""The real-model corpus (tests/corpus/real_models.py's CORPUS) through OpenVINO's runtime and tract.

    python -m bench.bench_engines_corpus [--only NAME ...] [--work DIR] [--jobs N] [--table bench/ENGINES.md]

Each model is one ``onnx-gate run`` (a fresh process, the CLI as a user calls it) of its corpus config at
opset 18 with both exporters and ``targets.runners: [openvino, tract]``: openvino's cells under its
``default`` preset (the engine's defaults) and its ``f32`` preset, tract's under its defaults. A model
whose ``needs`` module is missing is skipped, saying so. Per cell: pass, or the checks that failed and
the first line of what the first of them said (the engine's message where the engine refused). FAULTS
says, per failing cell, whether the engine (a refusal, a real numeric difference) or the gate is at
fault; each was read by hand from the cell's result.

With ``--table`` it replaces the section "## The real-model corpus on the engines" of that file (the
rest of the file, bench/bench_engines.py's tables, is left as it is).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SECTION = "## The real-model corpus on the engines"
OPSET = 18
EXPORTERS = ("dynamo", "torchscript")
RUNNERS = "[openvino, tract]"
COLUMNS = (("openvino", "default"), ("openvino", "f32"), ("tract", "default"))

FAULTS: dict[tuple[str, str, str], str] = {}
"""(model, exporter, column) → whose fault a failing cell is, in one line (read by hand)."""


def config(entry: Any) -> str:
    """The corpus entry's onnx-gate.yml at opset 18, both exporters, on the two engines."""
    from tests.corpus import real_models

    text = real_models.config_text(entry, (OPSET,), EXPORTERS)
    plain = "targets: {runtimes: [latest], providers: [cpu]}\n"
    assert plain in text, text
    return text.replace(plain, f"targets: {{runtimes: [latest], providers: [cpu], runners: {RUNNERS}}}\n")


def run_model(
    entry: Any, work: Path, jobs: int, reuse: bool = False
) -> tuple[dict[str, dict[str, Any]], float, str]:
    """``onnx-gate run`` on the entry; its results by target id, the seconds, the run's last lines
    (``reuse``: an earlier run's, where one finished in ``work``)."""
    directory = work / entry.name
    out = directory / "out"
    if reuse and (directory / "seconds").is_file():
        results = {p.stem: json.loads(p.read_text()) for p in (out / "results").glob("*.json")}
        return results, float((directory / "seconds").read_text()), "reused"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "onnx-gate.yml").write_text(config(entry))
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "ci_onnx", "run", "--config", str(directory / "onnx-gate.yml"),
         "--out", str(out), "--jobs", str(jobs)],
        capture_output=True, text=True, check=False, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    seconds = time.monotonic() - start
    (directory / "run.log").write_text(done.stdout + "\n" + done.stderr)
    (directory / "seconds").write_text(f"{seconds:.1f}")
    results = {p.stem: json.loads(p.read_text()) for p in (out / "results").glob("*.json")}
    tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-5:])
    return results, seconds, f"exit {done.returncode}: {tail}"


def verdict(result: dict[str, Any]) -> str:
    """pass, or the failed checks and the first line of the first one's message."""
    bad = [c for c in result["checks"] if c["status"] in ("failed", "error")]
    if result["status"] == "passed" and not bad:
        return "pass"
    if not bad:
        return f"{result['status']}: {first_line(result.get('summary', ''))}"
    names = ", ".join(c["name"] for c in bad)
    return f"FAIL {names}: {first_line(bad[0].get('message', ''))}"


def first_line(text: str, limit: int = 160) -> str:
    line = (text.strip().splitlines() or [""])[0].strip()
    line = line.replace("|", "\\|")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def cells(results: dict[str, dict[str, Any]]) -> dict[tuple[str, str], tuple[str, str]]:
    """(exporter, column) → (target id, verdict)."""
    found: dict[tuple[str, str], tuple[str, str]] = {}
    for target, r in results.items():
        t = r["target"]
        column = f"{t['runner']} {t['session_options']}" if t["runner"] == "openvino" else t["runner"]
        found[(t["exporter"], column)] = (target, verdict(r))
    return found


def column_name(kind: str, preset: str) -> str:
    return f"{kind} {preset}" if kind == "openvino" else kind


def section(rows: list[tuple[str, str, dict[tuple[str, str], tuple[str, str]]]], lines_after: list[str],
            releases: str, seconds: float) -> list[str]:  # fmt: skip
    heads = [column_name(k, p) for k, p in COLUMNS]
    out = [
        SECTION,
        "",
        "Written by `python -m bench.bench_engines_corpus --table bench/ENGINES.md`"
        " (bench/bench_engines_corpus.py): each model of tests/corpus/real_models.py's CORPUS, one"
        f" `onnx-gate run` at opset {OPSET} with both exporters and `targets.runners: {RUNNERS}`;"
        " openvino under its defaults and its `f32` preset (matrix/runners.toml). A cell is pass, or the"
        " checks that failed and the first line of the first one's message. "
        f"{releases}; {platform.machine()}, {os.cpu_count()} CPUs; {seconds:.0f} s in all.",
        "",
        "| model | exporter | " + " | ".join(heads) + " |",
        "|---|---|" + "---|" * len(heads),
    ]
    for model, exporter, found in rows:
        row = [found.get((exporter, h), ("", "no result"))[1] for h in heads]
        out.append(f"| {model} | {exporter} | " + " | ".join(row) + " |")
    return [*out, "", *lines_after]


def whose(rows: list[tuple[str, str, dict[tuple[str, str], tuple[str, str]]]]) -> list[str]:
    lines = []
    for model, exporter, found in rows:
        for head, (_, v) in sorted(found.items()):
            if head[0] != exporter or v == "pass":
                continue
            why = FAULTS.get((model, exporter, head[1]), "NOT READ YET")
            lines.append(f"- **{model} / {exporter} / {head[1]}**: {why}")
    return ["Whose fault each failing cell is:", "", *lines, ""] if lines else []


def replace_section(text: str, new: list[str]) -> str:
    """``text`` with SECTION (up to the next '## ' heading or the end) replaced by, or ended with, ``new``."""
    block = "\n".join(new).rstrip("\n") + "\n"
    pattern = re.compile(rf"^{re.escape(SECTION)}\n.*?(?=^## |\Z)", re.S | re.M)
    if pattern.search(text):
        return pattern.sub(lambda _: block + "\n", text, count=1).rstrip("\n") + "\n"
    return text.rstrip("\n") + "\n\n" + block


def main(argv: list[str] | None = None) -> int:
    from tests.corpus import real_models

    parser = argparse.ArgumentParser(prog="python -m bench.bench_engines_corpus", description=__doc__)
    parser.add_argument("--only", action="append", default=[], help="model names (repeatable)")
    parser.add_argument("--work", type=Path, default=ROOT / "onnx-gate-out" / "engines-corpus")
    parser.add_argument("--jobs", type=int, default=2, help="cells verified at once per run")
    parser.add_argument(
        "--reuse", action="store_true", help="read a model's results from an earlier run into --work"
    )
    parser.add_argument("--table", type=Path, help="the markdown file whose section to replace")
    args = parser.parse_args(argv)
    rows: list[tuple[str, str, dict[tuple[str, str], tuple[str, str]]]] = []
    skipped: list[str] = []
    releases: dict[str, str] = {}
    start = time.monotonic()
    for entry in real_models.CORPUS:
        if args.only and entry.name not in args.only:
            continue
        if entry.needs and importlib.util.find_spec(entry.needs) is None:
            skipped.append(f"- **{entry.name}** skipped: its module `{entry.needs}` is not installed.")
            print(skipped[-1], flush=True)
            continue
        results, seconds, tail = run_model(entry, args.work, args.jobs, args.reuse)
        found = cells(results)
        for r in results.values():
            releases[r["target"]["runner"]] = r["target"]["runtime"]
        for exporter in EXPORTERS:
            rows.append((entry.name, exporter, {k[1]: v for k, v in found.items() if k[0] == exporter}))
            print(
                entry.name, exporter, {k[1]: v[1] for k, v in found.items() if k[0] == exporter}, flush=True
            )
        print(f"  {entry.name}: {seconds:.0f} s, {len(results)} results; {tail}", flush=True)
    flat = [(m, e, {(e, h): v for h, v in f.items()}) for m, e, f in rows]
    stamp = ", ".join(f"{k} {v}" for k, v in sorted(releases.items())) or "no engine ran"
    lines = section(flat, [*whose(flat), *skipped], stamp, time.monotonic() - start)
    print("\n".join(lines))
    if args.table:
        args.table.write_text(replace_section(args.table.read_text(), lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
