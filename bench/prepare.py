"""Untimed preparation: bundles made with the real export stage, and the baselines' inputs.

For each model: ``onnx-gate export`` writes the bundle; then ``spec.json`` + ``.npy`` copies of every
data set's inputs and reference outputs (for bench/bare_verify.py), and Polygraphy's ``inputs.json`` /
``reference.json`` (written with Polygraphy's own API) hold the same feeds and the same references.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

from bench import common
from ci_onnx.contracts import tensorproto
from ci_onnx.contracts.bundle import MODEL, read_manifest

ROOT = Path(__file__).resolve().parent.parent


@dataclasses.dataclass(frozen=True)
class Prepared:
    name: str
    bundle: Path
    lean_bundle: Path
    """A copy of the bundle whose manifest serves no batch sizes: verify then checks parity, decisions
    and placement only (no batch, latency or memory work), the closest to Polygraphy's check."""
    target: str
    spec: Path
    poly_inputs: Path
    poly_reference: Path
    atol: float
    rtol: float


def tinycnn(work: Path) -> Prepared:
    out = work / "tinycnn" / "bundles"
    bundle = out / "op17-dynamo"
    if not (bundle / "manifest.json").is_file():
        cfg = ROOT / "examples" / "tinycnn" / "onnx-gate.yml"
        common.check_call(
            [common.onnx_gate(), "export", "--config", str(cfg), "--only", "op17-dynamo", "--out", str(out)]
        )
    return _baselines("tinycnn (DigitNet)", bundle, "ort{ort}-cpu-op17-dynamo", work / "tinycnn")


def minilm(work: Path) -> Prepared:
    """examples/minilm, exported offline with its own onnx-gate.yml (real weights, real samples)."""
    home = work / "minilm"
    bundle = home / "bundles" / "op18-dynamo"
    if not (bundle / "manifest.json").is_file():
        cfg = ROOT / "examples" / "minilm" / "onnx-gate.yml"
        common.check_call(
            [common.onnx_gate(), "export", "--config", str(cfg), "--out", str(home / "bundles")],
            env={"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
        )
    return _baselines("all-MiniLM-L6-v2", bundle, "ort{ort}-cpu-op18-dynamo", home)


def _baselines(name: str, bundle: Path, target: str, home: Path) -> Prepared:
    from polygraphy.comparator import IterationResult, RunResults
    from polygraphy.json import save_json

    m = read_manifest(bundle)
    tol = m.tolerance
    npy = home / "npy"
    npy.mkdir(parents=True, exist_ok=True)
    data_sets, poly_feeds, poly_outputs = [], [], []
    import numpy as np

    for ds in m.test_data_sets:
        feeds = {
            s.name: tensorproto.load(bundle / ds.directory / f"input_{i}.pb")[1]
            for i, s in enumerate(m.inputs)
        }
        refs = {
            s.name: tensorproto.load(bundle / ds.directory / f"output_{i}.pb")[1]
            for i, s in enumerate(m.outputs)
        }
        entry: dict[str, dict[str, str]] = {"inputs": {}, "outputs": {}}
        for kind, arrays in (("inputs", feeds), ("outputs", refs)):
            for k, v in arrays.items():
                rel = f"npy/{ds.directory}-{kind}-{k}.npy"
                np.save(home / rel, v)
                entry[kind][k] = rel
        data_sets.append(entry)
        poly_feeds.append(feeds)
        poly_outputs.append(IterationResult(outputs=refs, runner_name="pytorch-reference"))
    spec = {
        "model": str((bundle / MODEL).resolve()),
        "atol": tol.atol,
        "rtol": tol.rtol,
        "decision": m.decision.output if m.decision else None,
        "batch_sizes": list(m.batch_sizes),
        "latency_runs": common.LATENCY_RUNS,
        "data_sets": data_sets,
    }
    (home / "spec.json").write_text(json.dumps(spec, indent=1))
    save_json(poly_feeds, str(home / "inputs.json"))
    RunResults([("pytorch-reference", poly_outputs)]).save(str(home / "reference.json"))
    lean = home / "lean-bundle"
    if lean.exists():
        shutil.rmtree(lean)
    shutil.copytree(bundle, lean)
    manifest = json.loads((lean / "manifest.json").read_text())
    manifest["batch_sizes"] = []
    (lean / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return Prepared(
        name,
        bundle,
        lean,
        target,
        home / "spec.json",
        home / "inputs.json",
        home / "reference.json",
        tol.atol,
        tol.rtol,
    )
