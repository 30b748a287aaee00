"""The defect-injection suite: healthy corpus models, unmutated and mutated, through the whole gate.

PYTHONPATH=. python tests/injection/suite.py [--only MODEL ...] [--exporter E ...] [--table PATH]

prints model × mutation × exporter → the suite's own ground truth, the gate's verdict, and whether the
mutant was killed by the check that names its defect (tests/injection/mutants.py says what each
mutation does). The ground truth is tests/injection/truth.py, apart from the gate's code: the model on
fresh copies of its inputs against the exported file at sizes of its own, outputs paired by the names
the model returns, two torch runs on the same inputs, the fp16 file against torch. A mutant whose
export is right anyway (dynamo keeps an in-place edit) must pass; every other must fail its check. The
kill rate counts the broken mutants failed by the right check; a survivor is a finding, as is any
unmutated model that fails.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from tests.corpus import real_models
from tests.injection.truth import Truth, ground_truth

HERE = Path(__file__).resolve().parent
MUTANTS = HERE / "mutants.py"
TABLE = HERE / "INJECTION.md"
OPSET = 18


@dataclasses.dataclass(frozen=True)
class Model:
    name: str
    """A tests/corpus entry (its config) and a zoo factory of the same name."""
    axis: int
    """The dynamic axis of the first output that ``loop`` and ``baked`` act along."""
    named_outputs: bool
    """Whether the model names two or more outputs (dict, ModelOutput): ``reorder`` applies."""
    model_yaml: str = ""
    """The ``model:`` section, where it differs from the corpus entry's."""
    exporters: tuple[str, ...] = ()
    """The exporters whose export of the healthy model is right (default: both); a mutant is only a
    finding on an export of a healthy model."""


_BERT_UNPADDED = """\
inputs:
  input_ids: {shape: [batch, seq], dtype: int64, range: [0, 100]}
  attention_mask: {shape: [batch, seq], dtype: int64, range: [1, 2]}
outputs: [last_hidden_state, pooler_output]
dynamic_axes:
  input_ids: {0: batch, 1: seq}
  attention_mask: {0: batch, 1: seq}
  last_hidden_state: {0: batch, 1: seq}
  pooler_output: {0: batch}
dim_sizes: {seq: 12}
"""
"""BERT without padding: dynamo's export differs from torch on a row whose mask is all zeros (max abs
0.02 at any length; TorchScript's matches), which the truth below would count at seq = 1, where a
random mask of [0, 2) leaves half the rows empty. A healthy baseline needs inputs it is right on."""


MODELS = (
    Model("tinycnn", 0, False),
    Model("bert", 1, True, _BERT_UNPADDED),
    Model("gpt2", 1, False),
    Model("multi_rank", 0, True),
    Model("vit", 0, True),
    # dynamo bakes the GRU's sequence length into a Reshape (tests/corpus/REAL_MODELS.md): its export of
    # the healthy model is broken already, so only TorchScript's carries mutants
    Model("gru_h0", 0, False, exporters=("torchscript",)),
    Model("similarity", 0, False),
)

RIGHT_CHECK = {
    "inplace": "reference-parity",
    "reorder": "outputs",
    "loop": "dynamic-axes",
    "baked": "dynamic-axes",
    "random": "train-mode",
    "fp16": "parity[{first}]",
    "counter": "stateful",
    "running": "stateful",
    "cache": "stateful",
}
"""The check that names each mutation's defect ({first}: the model's first declared output)."""


@dataclasses.dataclass(frozen=True)
class Row:
    model: str
    mutation: str
    exporter: str
    precision: str
    truth: Truth
    verdict: str
    failed: tuple[str, ...]
    right: str
    message: str
    warnings: tuple[str, ...] = ()

    @property
    def outcome(self) -> str:
        if not self.truth.broken:
            return "pass" if self.verdict == "pass" else "FALSE FAIL"
        if self.verdict == "pass":
            return "SURVIVED"
        return "killed" if self.right in self.failed else "WRONG CHECK"


def mutations(model: Model) -> list[str]:
    out = ["none", "inplace"]
    if model.named_outputs:
        out.append("reorder")
    return [
        *out,
        f"loop_{model.axis}",
        f"baked_{model.axis}",
        "random",
        "fp16",
        "counter",
        "running",
        "cache",
    ]


def run_case(model: Model, mutation: str, work: Path, exporters: Sequence[str]) -> list[Row]:
    """Export and verify one mutant with the gate, and judge each cell against the suite's truth."""
    from ci_onnx import config

    entry = next(e for e in real_models.CORPUS if e.name == model.name)
    if model.model_yaml:
        entry = dataclasses.replace(entry, model=model.model_yaml)
    label = f"{model.name}__{mutation}"
    precisions = ("fp32", "fp16") if mutation in ("none", "fp16") else ("fp32",)
    cells = real_models.run_entry(
        entry, work, (OPSET,), exporters, factory=f"{MUTANTS}:{label}", precisions=precisions, label=label
    )
    cfg = config.load(work / label / "onnx-gate.yml")
    kind = mutation.split("_")[0]
    rows = []
    for cell in cells:
        truth = ground_truth(cfg, model.name, mutation, Path(cell.bundle), cell.precision)
        right = RIGHT_CHECK.get(kind, "").format(first=cfg.model.outputs[0])
        if kind == "fp16" and cell.precision == "fp32":
            right = ""
        said = dict(cell.messages)
        message = said.get(right) or (said[cell.failed[0]] if cell.failed else "")
        rows.append(
            Row(
                model.name,
                mutation,
                cell.exporter,
                cell.precision,
                truth,
                cell.verdict,
                cell.failed,
                right,
                message[:300],
                _warnings(Path(cell.bundle)),
            )
        )
    return rows


def _warnings(bundle: Path) -> tuple[str, ...]:
    from ci_onnx.contracts.bundle import read_manifest

    try:
        findings = read_manifest(bundle, verify_hashes=False).findings
    except Exception:
        return ()
    return tuple(w for f in findings if f.name == "reference-parity" for w in f.warnings)


def table(rows: Sequence[Row], seconds: float) -> str:
    broken = [r for r in rows if r.truth.broken]
    killed = [r for r in broken if r.outcome == "killed"]
    baseline = [r for r in rows if r.mutation == "none"]
    false_base = [r for r in baseline if r.outcome == "FALSE FAIL"]
    healthy_mutants = [r for r in rows if r.mutation != "none" and not r.truth.broken]
    lines = [
        "# Defect-injection suite",
        "",
        "Regenerated by `PYTHONPATH=. python tests/injection/suite.py --table tests/injection/INJECTION.md`",
        f"(opset {OPSET}; verify on the onnxruntime of the same interpreter, CPU). Truth is the suite's own",
        "comparison of the model and the exported file (see the module's docstring); the right check is the",
        "one that names the mutation's defect.",
        "",
        "| model | mutation | exporter | precision | truth | gate | failed checks | right check | outcome |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        truth = f"broken: {r.truth.why}" if r.truth.broken else "healthy"
        lines.append(
            f"| {r.model} | {r.mutation} | {r.exporter} | {r.precision} | {truth} | {r.verdict} | "
            f"{', '.join(r.failed) or '–'} | {r.right or '–'} | {r.outcome} |"
        )
    rate = f"{100 * len(killed) / len(broken):.0f} %" if broken else "n/a"
    lines += [
        "",
        f"{len(rows)} cells; {len(broken)} broken mutants, {len(killed)} killed by the right check "
        f"(kill rate {rate}); {len(healthy_mutants)} mutant cell(s) the export got right anyway, "
        f"{sum(r.outcome == 'FALSE FAIL' for r in healthy_mutants)} of them failed; unmutated: "
        f"{len(baseline)} cells, {len(false_base)} false fail(s); {seconds:.0f} s in all.",
        "",
    ]
    findings = [r for r in rows if r.outcome not in ("killed", "pass")]
    if findings:
        lines += ["## Findings", ""]
        lines += [
            f"- **{r.model} / {r.mutation} / {r.exporter} / {r.precision}**: {r.outcome}: {r.message}"
            for r in findings
        ]
        lines.append("")
    lines += ["## What the gate said", ""]
    for r in rows:
        if r.message and r.truth.broken:
            lines.append(f"- **{r.model} / {r.mutation} / {r.exporter} / {r.precision}**: {r.message}")
    warned = [r for r in rows if r.mutation == "inplace" and r.verdict == "pass"]
    for r in warned:
        lines.append(
            f"- **{r.model} / {r.mutation} / {r.exporter}** (passed, warned): {'; '.join(r.warnings) or 'NO WARNING'}"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", default=[], help="model names (repeatable)")
    parser.add_argument("--mutation", action="append", default=[], help="mutation kinds (repeatable)")
    parser.add_argument("--exporter", action="append", default=[], help="dynamo or torchscript")
    parser.add_argument("--out", type=Path, default=real_models.ROOT / "onnx-gate-out" / "injection")
    parser.add_argument("--table", type=Path, help="also write the table here (Markdown)")
    args = parser.parse_args(argv)
    start = time.monotonic()
    rows: list[Row] = []
    for model in MODELS:
        if args.only and model.name not in args.only:
            continue
        for mutation in mutations(model):
            if args.mutation and mutation.split("_")[0] not in args.mutation:
                continue
            t0 = time.monotonic()
            exporters = [e for e in args.exporter or real_models.EXPORTERS if e in (model.exporters or (e,))]
            done = run_case(model, mutation, args.out, exporters)
            for r in done:
                print(f"{r.model} {r.mutation} {r.exporter} {r.precision}: {r.outcome} {list(r.failed)} "
                      f"({time.monotonic() - t0:.0f} s) {r.message[:200]}", file=sys.stderr)  # fmt: skip
            rows += done
    text = table(rows, time.monotonic() - start)
    print(text)
    if args.table:
        args.table.write_text(text)
    return 1 if any(r.outcome not in ("killed", "pass") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
