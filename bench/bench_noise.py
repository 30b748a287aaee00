"""The serving comparison's false alarms and its detection, measured on this machine.

    python -m bench.bench_noise [--reruns 20] [--work bench/.work] [--ort 1.32.0] [--out bench/NOISE.md]

Two bundles of one small CNN, exported with the real `onnx-gate export`: the base (4 convolution
blocks) and a model doing twice the work (8 blocks; the stem and the head are a few percent of it).
Each rerun verifies, in turn (base, doubled, base, doubled, …), with the verify stage `onnx-gate run`
uses (its runner child, every serving figure on):

- a **no-op change**: the base bundle as the head, its own copy as the base: side by side, the two
  timed interleaved in one process;
- **twice the work**: the doubled bundle as the head, the base bundle timed beside it.
- a **no-op change on a tiny model** (one block on 8×8 inputs: tens of microseconds a run, where
  two sessions of one model timed in turns once differed by 30 %).

Each result is then judged by the gate's own comparison (ci_onnx/report/diff.py, the default
thresholds of onnx-gate.yml): side by side, and against the stored figures of the previous rerun's
base (another process, seconds earlier: the stored comparison on one machine; between two GitHub
runners the spread is larger, which is why the stored thresholds are wider). A rerun is a false alarm
when any serving figure of the no-op change is flagged; the doubled model must be flagged every time.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import re
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from bench import common
from ci_onnx.contracts.gate_settings import GateSettings
from ci_onnx.contracts.results import TargetResult
from ci_onnx.contracts.target import Target
from ci_onnx.report import diff
from tests.support.results import observed

HERE = Path(__file__).resolve().parent
SETTINGS = dataclasses.replace(GateSettings(), stored_figures="block")
"""The defaults, except that stored figures block: what each comparison would do if it blocked."""
MODEL = """\
import torch
from torch import nn


class ConvNet(nn.Module):
    def __init__(self, blocks: int) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 24, 3, padding=1)
        convs = [nn.Sequential(nn.Conv2d(24, 24, 3, padding=1), nn.ReLU()) for _ in range(blocks)]
        self.body = nn.Sequential(*convs)
        self.head = nn.Linear(24, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(torch.relu(self.stem(x))).sum(dim=(2, 3)))


def build() -> nn.Module:
    torch.manual_seed(0)
    return ConvNet(4)


def build_doubled() -> nn.Module:
    torch.manual_seed(0)
    return ConvNet(8)


def build_tiny() -> nn.Module:
    torch.manual_seed(0)
    return ConvNet(1)
"""
CONFIG = """\
version: 1
model:
  name: {name}
  factory: model.py:{factory}
  inputs: {{x: {{shape: [batch, 3, {size}, {size}]}}}}
  outputs: [logits]
  dynamic_axes: {{x: {{0: batch}}, logits: {{0: batch}}}}
export: {{opsets: [17], exporters: [torchscript]}}
verify: {{random_inputs: 4, batch_sizes: [1, 8]}}
targets: {{runtimes: ["{ort}"], providers: [cpu]}}
"""


def _export(work: Path, name: str, factory: str, ort: str, size: int = 24) -> Path:
    model_dir = work / "noise" / name
    bundle = model_dir / "out" / "op17-torchscript"
    if (bundle / "manifest.json").is_file():
        return bundle
    model_dir.mkdir(parents=True, exist_ok=True)
    (model_dir / "model.py").write_text(MODEL)
    (model_dir / "onnx-gate.yml").write_text(CONFIG.format(name=name, factory=factory, ort=ort, size=size))
    common.check_call(
        [
            common.onnx_gate(),
            "export",
            "--config",
            str(model_dir / "onnx-gate.yml"),
            "--out",
            str(model_dir / "out"),
        ]
    )
    return bundle


def _paired_dir(work: Path, base_bundle: Path, key: str) -> Path:
    """A directory holding the base bundle under its key, as `OUT/baseline/bundles/` would; the copy
    holds one more file (a note), so the runner times it beside the head rather than skipping a
    bundle of the very same files: the same model, timed in turns with itself."""
    from ci_onnx.contracts.bundle import read_manifest, sha256_of, write_manifest

    directory = work / "noise" / f"paired-{base_bundle.parent.parent.name}"
    if not (directory / key / "manifest.json").is_file():
        shutil.rmtree(directory, ignore_errors=True)
        shutil.copytree(base_bundle, directory / key)
        note = directory / key / "noise-copy.txt"
        note.write_text("the base bundle's copy, timed beside it\n")
        manifest = read_manifest(directory / key)
        files = {**manifest.files, note.name: sha256_of(note)}
        write_manifest(directory / key, dataclasses.replace(manifest, files=files))
    return directory


def _verify(bundle: Path, target: Target, out: Path, paired: Path | None) -> TargetResult:
    from ci_onnx.commands.options import default_cache_dir
    from ci_onnx.host.envs import find_uv
    from ci_onnx.orchestration.localrun import child_env
    from ci_onnx.runners.base import Provisioning
    from ci_onnx.verify import stage

    options = dataclasses.replace(stage.options_from(None), paired_bundles=str(paired or ""))
    how = Provisioning(default_cache_dir(), child_env(dict(common.child_env())), find_uv())
    return stage.verify_target(bundle, target, out, options, how).result


def _figure(f: diff.Finding) -> str:
    """``p50 latency``, ``max of N latency``, ``cold start``: the figure, whatever its batch size."""
    return re.sub(r"of \d+", "of N", f.what.split(",")[0])


CASES = {
    "noop": "no-op",
    "double": "twice the work",
    "tiny": "no-op, a tiny model (about 50 µs a run)",
}


@dataclasses.dataclass(frozen=True)
class Tally:
    runs: int = 0
    flagged: int = 0
    """Reruns with any serving figure flagged."""
    by_latency: int = 0
    """Reruns with a latency figure flagged (the doubled model's size alone would give it away)."""
    by_figure: tuple[tuple[str, int], ...] = ()
    warned: tuple[tuple[str, int], ...] = ()
    """Reruns with a warning (a figure of one run or one measurement a side past its threshold:
    the maximum of fewer than 100 runs, a cold start), by figure."""

    def add(self, findings: Sequence[diff.Finding]) -> Tally:
        flagged = sorted({_figure(f) for f in findings if f.kind == diff.SERVING and f.regression})
        counts = dict(self.by_figure)
        for what in flagged:
            counts[what] = counts.get(what, 0) + 1
        latency = any("latency" in what for what in flagged)
        warned = dict(self.warned)
        for what in sorted({_figure(f) for f in findings if f.warning}):
            warned[what] = warned.get(what, 0) + 1
        return Tally(
            self.runs + 1,
            self.flagged + bool(flagged),
            self.by_latency + latency,
            tuple(sorted(counts.items())),
            tuple(sorted(warned.items())),
        )


def _read(directory: Path) -> TargetResult:
    from ci_onnx.contracts.results import read_result

    return read_result(next((directory / "results").glob("*.json")))


def _serving(head: TargetResult, base: TargetResult, *, stored: bool) -> list[diff.Finding]:
    if stored:  # drop the pair: the figures of two processes, compared with the wider thresholds
        head = observed(head, paired=None)
    return diff.serving(head, base, SETTINGS)  # the rules themselves: identical bytes are never compared


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_noise", description=__doc__)
    parser.add_argument("--reruns", type=int, default=20)
    parser.add_argument("--work", type=Path, default=HERE / ".work")
    parser.add_argument("--ort", default="1.32.0")
    parser.add_argument("--out", type=Path, default=HERE / "NOISE.md")
    parser.add_argument(
        "--judge-only", action="store_true", help="Judge the results the last run left again, verify nothing."
    )
    args = parser.parse_args(argv)
    base_bundle = _export(args.work, "base", "build", args.ort)
    doubled_bundle = _export(args.work, "doubled", "build_doubled", args.ort)
    tiny_bundle = _export(args.work, "tiny", "build_tiny", args.ort, size=8)
    target = Target(args.ort, "cpu", 17, "torchscript")
    paired = _paired_dir(args.work, base_bundle, target.bundle_key)
    paired_tiny = _paired_dir(args.work, tiny_bundle, target.bundle_key)
    runs = args.work / "noise" / "runs"
    if not args.judge_only:
        shutil.rmtree(runs, ignore_errors=True)
    tallies = {f"{c}-{how}": Tally() for c in CASES for how in ("side", "stored")}
    previous: dict[str, TargetResult] = {}
    ratios: dict[str, list[float]] = {c: [] for c in CASES}
    for i in range(args.reruns + 1):  # rerun 0 only warms the environment and the caches
        if args.judge_only:  # the results of the last run, judged again (other thresholds, say)
            heads = {c: _read(runs / f"{i}" / c) for c in CASES}
        else:
            heads = {
                "noop": _verify(base_bundle, target, runs / f"{i}" / "noop", paired),
                "double": _verify(doubled_bundle, target, runs / f"{i}" / "double", paired),
                "tiny": _verify(tiny_bundle, target, runs / f"{i}" / "tiny", paired_tiny),
            }
        print(
            f"rerun {i}: " + " / ".join(r.status.value for r in heads.values()), file=sys.stderr, flush=True
        )
        if i:
            # the base's stored figures: the previous rerun of the base bundle (its model, its sha)
            for name, head in heads.items():
                before = previous["tiny" if name == "tiny" else "noop"]
                side = _serving(head, before, stored=False)
                tallies[f"{name}-side"] = tallies[f"{name}-side"].add(side)
                tallies[f"{name}-stored"] = tallies[f"{name}-stored"].add(_serving(head, before, stored=True))
                p50 = next(f for f in side if f.what == "p50 latency, batch 8")
                ratios[name].append(float(p50.figure.removesuffix(" %")) / 100 + 1)
        previous = {"noop": heads["noop"], "tiny": heads["tiny"]}
    text = _table(tallies, ratios, args)
    args.out.write_text(text)
    print(text)
    return 0


def _table(tallies: dict[str, Tally], ratios: dict[str, list[float]], args: argparse.Namespace) -> str:
    import statistics

    def rate(t: Tally) -> str:
        return f"{t.flagged} of {t.runs}"

    def figures(t: Tally) -> str:
        return ", ".join(f"{what} {n}" for what, n in t.by_figure) or "none"

    s = GateSettings().serving
    lines = [
        "# The serving comparison: false alarms and detection",
        "",
        f"`python -m bench.bench_noise --reruns {args.reruns}` on {datetime.date.today().isoformat()}; "
        + "; ".join(common.machine_lines()),
        "",
        "A no-op change (the base bundle against its own copy) and a model doing twice the work (8 "
        "convolution blocks against 4), each verified once per rerun, interleaved; every serving "
        "figure judged by the gate's comparison with the default thresholds "
        f"(p50: {s['p50'].threshold:.0%} side by side, {s['p50'].stored_threshold:.0%} stored, "
        f"p < {s['p50'].p}; tail: {s['tail'].threshold:.0%} / {s['tail'].stored_threshold:.0%}; "
        f"cold start {s['cold_start'].threshold:.0%} (a warning only), "
        f"peak RSS {s['peak_rss'].threshold:.0%}, "
        f"model size {s['model_size'].threshold:.0%}).",
        "",
        "| change | compared | reruns flagged (any figure) | by a latency figure | figures flagged (reruns) "
        "| warnings, not blocking (reruns) | median p50 ratio, batch 8 |",
        "|---|---|---:|---:|---|---:|---:|",
    ]
    for name, label in CASES.items():
        median = statistics.median(ratios[name]) if ratios[name] else float("nan")
        for how, what in (
            ("side", "side by side (one process, interleaved)"),
            ("stored", "against the previous rerun's stored figures"),
        ):
            t = tallies[f"{name}-{how}"]
            latency = f"{t.by_latency} of {t.runs}"
            warned = ", ".join(f"{what} {n}" for what, n in t.warned) or "none"
            lines.append(
                f"| {label} | {what} | {rate(t)} | {latency} | {figures(t)} | {warned} | {median:.2f}× |"
            )
    lines += [
        "",
        "A false alarm is a no-op rerun with any serving figure flagged as a regression, which would "
        "block (it must be at most 1 in 20); the doubled model must be flagged in every rerun. Cold "
        "start, peak RSS and model size are judged against the previous rerun's stored figures in both "
        "rows (one measurement a side, never paired); a cold start past its threshold, and the maximum "
        "of fewer than 100 runs, are warnings, never blocks. The stored rows are judged as "
        "`gate.stored_figures: block` would judge them: with the default (`warn`) each of their flags is "
        "a warning instead. The doubled model's size gives it away in every rerun; the latency column "
        "is the timing's own detection.",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
