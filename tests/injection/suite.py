"""The defect-injection suite: healthy corpus models, unmutated and mutated, through the whole gate.

PYTHONPATH=. python tests/injection/suite.py [--only MODEL ...] [--exporter E ...] [--table PATH]

prints model × mutation × exporter → the suite's own ground truth, the gate's verdict, and whether the
mutant was killed by the check that names its defect (tests/injection/mutants.py says what each
mutation does). The ground truth is computed here, apart from the gate's code: the model on fresh
copies of its inputs against the exported file (onnxruntime CPU) at sizes of its own choosing for every
declared dynamic dim, outputs paired by the names the model returns where it names them, two runs of
torch on the same inputs, and the fp16 file against torch. A mutant whose export is right anyway
(dynamo keeps an in-place edit) must pass; every other must fail its check. The kill rate counts the
broken mutants failed by the right check; a survivor is a finding, as is any unmutated model that fails.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tests.corpus import real_models

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
)

RIGHT_CHECK = {
    "inplace": "reference-parity",
    "reorder": "outputs",
    "loop": "dynamic-axes",
    "baked": "dynamic-axes",
    "random": "train-mode",
    "fp16": "parity[{first}]",
}
"""The check that names each mutation's defect ({first}: the model's first declared output)."""


@dataclasses.dataclass(frozen=True)
class Truth:
    broken: bool
    why: str = ""


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
    return [*out, f"loop_{model.axis}", f"baked_{model.axis}", "random", "fp16"]


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
    from ci_onnx.bundle import read_manifest

    try:
        findings = read_manifest(bundle, verify_hashes=False).findings
    except Exception:
        return ()
    return tuple(w for f in findings if f.name == "reference-parity" for w in f.warnings)


def truth_sizes(export_size: int) -> tuple[int, ...]:
    """The suite's own sizes for a dynamic dim (not the gate's): small, odd, just past, well past."""
    return tuple(s for s in dict.fromkeys((1, 3, export_size + 1, 2 * export_size + 3)) if s != export_size)


def ground_truth(cfg: Any, model_name: str, mutation: str, bundle: Path, precision: str) -> Truth:
    """Whether the exported file computes what the model computes, judged without the gate's code."""
    import onnxruntime as ort
    import torch

    from tests.injection import mutants

    path = bundle / "model.onnx"
    if not path.is_file():
        return Truth(True, "no model file was written")
    try:
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    except Exception as exc:
        return Truth(True, f"onnxruntime cannot load it: {str(exc)[:120]}")
    torch.manual_seed(1234)
    model = mutants.build(model_name, mutation).eval()
    tol = cfg.verify.precision_tolerance[precision][0] if precision != "fp32" else cfg.verify.tolerance
    m = cfg.model
    base = {s: 2 for s in _symbols(m)}
    base.update({k: v for k, v in m.dim_sizes.items() if k in base})
    rng = np.random.default_rng(4242)
    grid = [dict(base)] + [{**base, s: n} for s in base for n in truth_sizes(base[s])]
    first = _inputs(m, base, rng)
    once, again = _torch(model, m, first), _torch(model, m, first)
    if once is not None and again is not None and not _close(once, again, tol):
        return Truth(True, "torch gives two answers on the same inputs")
    for sizes in grid:
        feeds = _inputs(m, sizes, rng)
        expected = _torch(model, m, feeds)
        if expected is None:
            continue  # torch itself rejects these sizes
        try:
            got = session.run(None, feeds)
        except Exception:
            return Truth(True, f"onnxruntime fails at {sizes}")
        names = [o.name for o in session.get_outputs()]
        for name, value in zip(names, got, strict=False):
            ref = expected.get(name)
            if ref is None or ref.shape != value.shape or not np.allclose(value, ref, tol.rtol, tol.atol):
                return Truth(True, f"output {name!r} differs from torch at {sizes}")
    return Truth(False)


def _symbols(m: Any) -> list[str]:
    return list(
        dict.fromkeys(n for axes in m.dynamic_axes.values() for n in axes.values() if n in _input_symbols(m))
    )


def _input_symbols(m: Any) -> set[str]:
    return {n for s in m.inputs for n in m.dynamic_axes.get(s.name, {}).values()}


def _inputs(m: Any, sizes: Mapping[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    out = {}
    for spec in m.inputs:
        axes = m.dynamic_axes.get(spec.name, {})
        shape = [sizes[axes[str(i)]] if str(i) in axes else d for i, d in enumerate(spec.shape)]
        dtype = np.dtype(spec.dtype)
        if dtype.kind in "iu":
            low, high = spec.value_range
            out[spec.name] = rng.integers(int(low), int(high), size=shape).astype(dtype)
        else:
            out[spec.name] = rng.standard_normal(size=shape).astype(dtype)
    return out


def _torch(model: Any, m: Any, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray] | None:
    """The model's outputs by name: its own names where it gives them all, else the declared by position."""
    import torch

    from ci_onnx.export import signature

    binding = signature.bind(model.forward, [s.name for s in m.inputs])
    try:
        with torch.no_grad():
            out = binding.call(model, {k: torch.tensor(v) for k, v in feeds.items()})
    except Exception:
        return None
    leaves = _leaves(out)
    names = [n for n, _ in leaves]
    if all(names) and set(m.outputs) <= set(names):
        return {n: t.numpy() for n, t in leaves if n in m.outputs}
    return {d: t.numpy() for d, (_, t) in zip(m.outputs, leaves, strict=False)}


def _leaves(out: Any, name: str = "") -> list[tuple[str, Any]]:
    import torch

    if isinstance(out, torch.Tensor):
        return [(name, out)]
    if hasattr(out, "items"):
        return [leaf for k, v in out.items() if v is not None for leaf in _leaves(v, str(k))]
    if isinstance(out, (tuple, list)):
        return [leaf for v in out for leaf in _leaves(v, "")]
    return []


def _close(a: Mapping[str, np.ndarray], b: Mapping[str, np.ndarray], tol: Any) -> bool:
    return all(a[k].shape == b[k].shape and np.allclose(a[k], b[k], tol.rtol, tol.atol) for k in a)


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
            done = run_case(model, mutation, args.out, args.exporter or real_models.EXPORTERS)
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
