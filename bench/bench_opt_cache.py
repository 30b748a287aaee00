"""The optimized-model cache: session creation from the original file against the cached optimized graph.

    python -m bench.bench_opt_cache [--runs 15] [--work bench/.work]

For DigitNet and all-MiniLM-L6-v2 (bundles made with the real ``onnx-gate export``, MiniLM offline),
on the onnxruntime installed beside onnx-gate, CPU provider, for the runtime's default session options
and the ``basic`` preset, each case of one model runs in turn (interleaved), after a warm-up round:

- *original* (the baseline): ``InferenceSession(model.onnx)`` with the preset, optimizing at load;
- *cached*: ``InferenceSession(<cache entry>)`` with graph optimization off, the file that
  ci_onnx.observer.optcache writes once per (release, providers, session options, model sha256);
- *original, optimization off*: the unoptimized graph loaded without optimizing, for scale.

The cache entry is written once, untimed, with the same code the runner uses, and its outputs are
compared with the original session's on the bundle's data sets. Writes bench/OPT_CACHE.md.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np

from bench import common, harness
from ci_onnx.contracts import tensorproto
from ci_onnx.contracts.bundle import MODEL, read_manifest
from ci_onnx.observer import optcache
from ci_onnx.runners import session as presets

ROOT = Path(__file__).resolve().parent.parent
OUT = Path(__file__).resolve().parent / "OPT_CACHE.md"
ORIGINAL, CACHED, NO_OPT = (
    "original (optimized at load)",
    "cached optimized graph",
    "original, optimization off",
)
PRESETS = ("default", "basic")
CPU = ["CPUExecutionProvider"]


def bundles(work: Path) -> dict[str, Path]:
    """The two examples' fp32 bundles, exported once with the real export stage."""
    found = {}
    for name, example, key, env in (
        ("DigitNet", "tinycnn", "op17-dynamo", {}),
        ("all-MiniLM-L6-v2", "minilm", "op18-dynamo", {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}),
    ):
        out = work / "opt-cache" / example
        if not (out / key / "manifest.json").is_file():
            cfg = ROOT / "examples" / example / "onnx-gate.yml"
            argv = [common.onnx_gate(), "export", "--config", str(cfg), "--only", key, "--out", str(out)]
            common.check_call(argv, env=env)
        found[name] = out / key
    return found


def _feeds(bundle: Path) -> list[dict[str, np.ndarray]]:
    m = read_manifest(bundle)
    return [
        {s.name: tensorproto.load(bundle / ds.directory / f"input_{i}.pb")[1] for i, s in enumerate(m.inputs)}
        for ds in m.test_data_sets
    ]


def measure(name: str, bundle: Path, preset: str, runs: int, cache: Path) -> tuple[str, dict[str, str]]:
    import onnxruntime as ort

    settings = presets.builtin()[preset].settings()
    model = str(bundle / MODEL)
    sha = read_manifest(bundle).files[MODEL]
    path = optcache.entry(cache, optcache.key(ort.__version__, CPU, settings, sha))
    if not path.is_file():
        optcache.write(ort, model, CPU, settings, path)

    def create(file: str, *, cached: bool, optimize: bool = True) -> object:
        so = optcache._options(ort, settings, cached=cached or not optimize)
        return ort.InferenceSession(file, so, providers=CPU)

    same = 0
    feeds = _feeds(bundle)
    original, from_cache = create(model, cached=False), create(str(path), cached=True)
    for f in feeds:
        a, b = original.run(None, f), from_cache.run(None, f)  # type: ignore[attr-defined]
        same += all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    timings = harness.interleaved(
        {
            ORIGINAL: lambda: create(model, cached=False),
            CACHED: lambda: create(str(path), cached=True),
            NO_OPT: lambda: create(model, cached=False, optimize=False),
        },
        runs=runs,
    )
    sizes = path.stat().st_size / 1e6, Path(model).stat().st_size / 1e6
    extra = {
        "cached file": f"{sizes[0]:.2f} MB (original {sizes[1]:.2f} MB)",
        "outputs of the cached graph": f"bit-identical on {same} of {len(feeds)} data sets",
    }
    title = f"### {name}, preset `{preset}` ({presets.builtin()[preset].describe()})"
    ratio = harness.ratio(timings, CACHED, ORIGINAL)
    body = table(timings, ORIGINAL, extra)
    return f"{title}\n\n{body}\n\ncached / original: **{ratio:.2f}×**", {"ratio": f"{ratio:.2f}"}


def table(timings: dict[str, harness.Timing], baseline: str, extra: dict[str, str]) -> str:
    """harness.table's layout with sub-millisecond medians (DigitNet's sessions take about 1 ms)."""
    base = timings[baseline].median
    lines = ["| case | median | ratio to baseline | runs | spread (IQR/2) |", "|---|---:|---:|---:|---:|"]
    for name, t in timings.items():
        mark = " (baseline)" if name == baseline else ""
        lines.append(
            f"| {name}{mark} | {t.median * 1000:.2f} ms | {t.median / base:.2f}× | {len(t.runs)} | "
            f"±{t.spread * 100:.0f}% |"
        )
    lines += [f"| {k} | {v} | | | |" for k, v in extra.items()]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_opt_cache")
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--work", type=Path, default=Path(__file__).resolve().parent / ".work")
    args = parser.parse_args()
    import onnxruntime as ort

    sections = []
    with tempfile.TemporaryDirectory(prefix="onnx-gate-optcache-") as tmp:
        for name, bundle in bundles(args.work).items():
            for preset in PRESETS:
                text, _ = measure(name, bundle, preset, args.runs, Path(tmp))
                print(text, "\n", flush=True)
                sections.append(text)
    head = [
        "# The optimized-model cache: session creation",
        "",
        "Written by `python -m bench.bench_opt_cache` "
        f"(--runs {args.runs}); onnxruntime {ort.__version__}, CPU provider. Medians of interleaved runs "
        "after one warm-up round; ratios against the original file optimized at load, measured in the "
        "same loop. The cached graph is loaded with graph optimization off.",
        "",
        *common.machine_lines(),
        "",
    ]
    OUT.write_text("\n".join([*head, "\n\n".join(sections), ""]))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
