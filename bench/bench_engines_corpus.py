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

_SYMBOLS = (
    "tract's: a refusal at load. Its shape analysis cannot carry the product of symbols the gate's input"
    " facts (batch, seq: one optimized model serves every batch size) make at this node; with the"
    " example's concrete sizes as facts tract loads and runs it (checked by hand on bert)."
)
FAULTS: dict[tuple[str, str, str], str] = {
    ("bert", "torchscript", "tract"): _SYMBOLS,
    ("gpt2", "torchscript", "tract"): _SYMBOLS,
    ("t5", "torchscript", "tract"): _SYMBOLS,
    ("minilm", "torchscript", "tract"): _SYMBOLS,
    ("gpt2", "dynamo", "tract"): (
        "tract's: it panics (an assertion in core/src/ops/matmul/optimized.rs) and aborts the process while"
        " running the model; a crash of the engine, reported as the runner error it is. The gate now quotes"
        " the panic (ci_onnx/runners/engine.py), where it quoted 'thread caused non-unwinding panic.'"
    ),
    ("gpt2_past", "dynamo", "tract"): (
        "tract's: a refusal at load; its analysis cannot divide 32·batch·(seq+past) by 16·(seq+past) in a"
        " Reshape to [-1, seq+past, 16] (the TorchScript export of the same model passes)."
    ),
    ("t5", "dynamo", "tract"): (
        "tract's: a run failure: 'Undetermined symbol in expression' in a Slice tract made of the file's"
        " permute (node_permute_1.MoveAxis…); with concrete facts its analysis rejects the file's symbolic"
        " value_info instead. Checked by hand."
    ),
    ("lstm", "torchscript", "tract"): (
        "tract's: with a symbolic batch its Scan (the LSTM) resolves batch to 1 inside the loop body and"
        " fails on batch 4 ('Clashing resolution for expression. batch=4 != 1'); batch 1 runs, and with"
        " concrete facts (4, 7) batch 4 runs (checked by hand). A real engine bug, not the gate's facts."
    ),
}
"""(model, exporter, column) → whose fault a failing cell is, in one line (read by hand)."""

EXPORT = (
    "the export's, neither the engine's nor the gate's: dynamo bakes the example's sequence length into"
    " the file (the dynamic-axes check, the same true fail as on onnxruntime: tests/corpus/REAL_MODELS.md);"
    " nothing reaches the engine."
)
BF16 = (
    "OpenVINO's: a real numeric difference. Its defaults ran the f32 model in bf16 on this CPU"
    " (INFERENCE_PRECISION_HINT bf16, the engine-precision check); the f32 preset passes."
)


def fault(model: str, exporter: str, column: str, failed: tuple[str, ...]) -> str:
    """Whose fault a failing cell is: FAULTS, else the two causes every such cell here shares."""
    if (model, exporter, column) in FAULTS:
        return FAULTS[(model, exporter, column)]
    if "dynamic-axes" in failed:
        return EXPORT
    if column == "openvino default" and "engine-precision" in failed:
        return BF16
    return "NOT READ YET"


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
    return f"FAIL {grouped([c['name'] for c in bad])}: {first_line(bad[0].get('message', ''))}"


def grouped(names: list[str]) -> str:
    """Check names, those of one family (sweep[seq=1], sweep[seq=7]) as one with their count."""
    families: dict[str, int] = {}
    for name in names:
        families[name.split("[", 1)[0]] = families.get(name.split("[", 1)[0], 0) + 1
    one = {n.split("[", 1)[0]: n for n in names}
    return ", ".join(one[f] if k == 1 else f"{f} ×{k}" for f, k in families.items())


def first_line(text: str, limit: int = 110) -> str:
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
        f"{releases}; {platform.machine()}, {os.cpu_count()} CPUs;"
        f" {seconds:.0f} s of `onnx-gate run` in all.",
        "",
        "| model | exporter | " + " | ".join(heads) + " |",
        "|---|---|" + "---|" * len(heads),
    ]
    for model, exporter, found in rows:
        row = [found.get((exporter, h), ("", "no result"))[1] for h in heads]
        out.append(f"| {model} | {exporter} | " + " | ".join(row) + " |")
    return [*out, "", *lines_after]


def whose(rows: list[tuple[str, str, dict[tuple[str, str], tuple[str, str]]]]) -> list[str]:
    """Each cause of failing cells, once, with the cells it explains; and each column's passes."""
    heads = [column_name(k, p) for k, p in COLUMNS]
    passes = {h: sum(f.get((e, h), ("", ""))[1] == "pass" for _, e, f in rows) for h in heads}
    causes: dict[str, list[str]] = {}
    for model, exporter, found in rows:
        for head, (_, v) in sorted(found.items()):
            if head[0] != exporter or v == "pass":
                continue
            failed = tuple(n.split("[", 1)[0] for n in v.removeprefix("FAIL ").split(": ", 1)[0].split(", "))
            why = fault(model, exporter, head[1], tuple(f.split(" ×")[0] for f in failed))
            causes.setdefault(why, []).append(f"{model}/{exporter}/{head[1]}")
    lines = ["Passes: " + ", ".join(f"{h} {n} of {len(rows)}" for h, n in passes.items()) + ".", ""]
    if causes:
        unread = "NOT READ YET" in causes
        lines += [f"Whose fault each failing cell is{'' if unread else ' (none is the gate’s)'}:", ""]
        lines += [f"- {why} ({len(cells)}: {', '.join(cells)})" for why, cells in causes.items()]
        lines.append("")
    return lines


def section_of(text: str) -> str:
    """SECTION of ``text`` (up to the next '## ' heading or the end), '' where it has none; what
    bench/bench_engines.py keeps when it rewrites the file."""
    m = re.search(rf"^{re.escape(SECTION)}\n.*?(?=^## |\Z)", text, re.S | re.M)
    return m.group(0) if m else ""


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
    total = 0.0
    for entry in real_models.CORPUS:
        if args.only and entry.name not in args.only:
            continue
        if entry.needs and importlib.util.find_spec(entry.needs) is None:
            skipped.append(f"- **{entry.name}** skipped: its module `{entry.needs}` is not installed.")
            print(skipped[-1], flush=True)
            continue
        results, seconds, tail = run_model(entry, args.work, args.jobs, args.reuse)
        total += seconds
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
    lines = section(flat, [*whose(flat), *skipped], stamp, total)
    print("\n".join(lines))
    if args.table:
        args.table.write_text(replace_section(args.table.read_text(), lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
