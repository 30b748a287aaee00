"""Derive the fp16 and int8 bundles from an fp32 bundle's graph, without going back to torch.

``python -m ci_onnx.export.precision --config … --precision fp16 --source DIR --bundle-dir DIR``

The derived bundle keeps the fp32 bundle's test data sets: their outputs are the PyTorch reference,
so a quantized cell is judged against PyTorch, not against the fp32 ONNX file. Its manifest carries
the precision and that precision's tolerance (``verify.precision_tolerance``); the decision check
stays the same hard assertion as for fp32.
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import sys
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ci_onnx.config import Config
from ci_onnx.contracts.bundle import MODEL, Manifest, hash_files, read_manifest, write_manifest
from ci_onnx.contracts.errors import EXIT_PASS, ConfigError, GateError
from ci_onnx.contracts.results import CheckResult
from ci_onnx.contracts.target import DERIVED_PRECISIONS as DERIVED
from ci_onnx.contracts.target import Status

FP16_BLOCKED = {
    "Exp": "e^x overflows fp16 (max 65504) from x > 11",
    "Pow": "squares of activations above 256 overflow fp16",
    "Softmax": "its exp and its sum overflow fp16 on logits above 11",
    "LogSoftmax": "its exp and its sum overflow fp16 on logits above 11",
    "ReduceSum": "sums of many fp16 terms overflow and lose the small ones",
    "ReduceMean": "its sum of many fp16 terms overflows (LayerNorm variance, pooling)",
    "Sqrt": "its input is often a variance (RMSNorm, a hand-written LayerNorm) beyond fp16 once cast back",
    "LayerNormalization": "its variance overflows fp16 on activations above 256",
    "Erf": "ORT's CPU provider has no fp16 kernel, so it would fall back through Casts anyway",
}
"""Ops kept in fp32 in the fp16 graph, each with why. onnxruntime's own list (ops with no fp16 kernel,
and TopK/Min/Max/Range/CumSum) is added to it."""

SMALL_CALIBRATION = 100
"""Below this many calibration inputs, static quantization's ranges are a guess: warned."""


SORTED_RATIO = 0.5
"""Neighbouring inputs closer than this share of random pairs' distance: the set looks sorted (by class,
by recording, by brightness)."""


@dataclasses.dataclass(frozen=True)
class Calibration:
    feeds: dict[str, np.ndarray]
    count: int
    warnings: tuple[str, ...]


def calibration(cfg: Config, seed: int) -> Calibration:
    """The calibration inputs (export.calibration, else model.samples), shuffled; a warning when the set
    is small, sorted or constant."""
    from ci_onnx.export import inputs

    feeds, key = calibration_set(cfg)
    count = inputs.count_of(feeds, cfg.model.inputs)
    order = np.random.default_rng(seed).permutation(count)
    notes = []
    if count < SMALL_CALIBRATION:
        notes.append(
            f"{key} has {count} calibration inputs; static int8 ranges want a few hundred representative ones"
        )
    for name, arr in feeds.items():
        notes.extend(_suspect(f"{key}[{name!r}]", np.asarray(arr)))
    return Calibration({k: np.asarray(v)[order] for k, v in feeds.items()}, count, tuple(notes))


def calibration_set(cfg: Config) -> tuple[dict[str, np.ndarray], str]:
    """The declared calibration set and the key it came from; wrong names or shapes: one line."""
    from ci_onnx.export import inputs

    key, path = ("export.calibration", cfg.export.calibration) if cfg.export.calibration else (
        "model.samples", cfg.model.samples)  # fmt: skip
    if not path:
        raise ConfigError(
            f"{cfg.path}: export.precisions: int8-static needs calibration inputs; set export.calibration "
            "(or model.samples) to an .npz of a few hundred representative inputs"
        )
    feeds = inputs.load_samples(cfg.resolve(path), cfg.model.inputs, key=f"{cfg.path}: {key}")
    return {k: np.asarray(v) for k, v in feeds.items()}, key


def _suspect(name: str, arr: np.ndarray) -> list[str]:
    """A calibration input that is constant, or sorted along the batch axis (a training set's first batch)."""
    if arr.ndim == 0 or arr.shape[0] < 2 or not np.issubdtype(arr.dtype, np.number):
        return []
    flat = arr.reshape(arr.shape[0], -1).astype(np.float64)
    if np.all(flat == flat[0]):
        return [
            f"model.samples[{name!r}] is constant across its {arr.shape[0]} inputs: no range to calibrate"
        ]
    means = flat.mean(axis=1)
    slack = 1e-6 * (float(np.abs(means).max()) or 1.0)  # float rounding of equal means
    steps = np.diff(means)
    monotonic = bool(np.all(steps >= -slack) or np.all(steps <= slack))
    neighbours = float(np.linalg.norm(np.diff(flat, axis=0), axis=1).mean())
    shuffled = flat[np.random.default_rng(0).permutation(len(flat))]
    strangers = float(np.linalg.norm(np.diff(shuffled, axis=0), axis=1).mean())
    if monotonic or (len(flat) >= 8 and neighbours < SORTED_RATIO * strangers):
        return [
            f"{name} looks sorted (its inputs' means are monotonic, or neighbours are far more alike than "
            "random pairs): shuffle it and take a representative set, not a sorted batch"
        ]
    return []


class _Reader:
    """A CalibrationDataReader over stacked feeds, one input at a time."""

    def __init__(self, feeds: Mapping[str, np.ndarray], count: int) -> None:
        self._rows: Iterator[dict[str, np.ndarray]] = iter(
            {k: np.ascontiguousarray(v[i : i + 1]) for k, v in feeds.items()} for i in range(count)
        )

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._rows, None)


def convert(
    source: Path, target: Path, precision: str, cfg: Config, seed: int
) -> tuple[str, tuple[str, ...]]:
    """Write the ``precision`` version of ``source`` to ``target``; returns (what was done, warnings)."""

    if precision == "fp16":
        return to_fp16(source, target, FP16_BLOCKED), beyond_fp16(source)
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_dynamic, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    prepared = target.with_name("prepared.onnx")
    quant_pre_process(str(source), str(prepared), skip_symbolic_shape=True)
    try:
        if precision == "int8-dynamic":
            quantize_dynamic(str(prepared), str(target), weight_type=QuantType.QInt8)
            return "int8 dynamic: weights int8, activations quantized at run time", ()
        cal = calibration(cfg, seed)
        check_feeds(cal.feeds, prepared, cfg)
        quantize_static(
            str(prepared),
            str(target),
            _Reader(cal.feeds, cal.count),
            quant_format=QuantFormat.QDQ,
            activation_type=QuantType.QInt8,
            weight_type=QuantType.QInt8,
            per_channel=True,
        )
        return f"int8 static QDQ, calibrated on {cal.count} shuffled inputs", cal.warnings
    finally:
        prepared.unlink(missing_ok=True)


def to_fp16(source: Path, target: Path, blocked_here: Mapping[str, str]) -> str:
    """fp16 weights and activations, fp32 inputs and outputs, the ``blocked_here`` ops (and
    onnxruntime's own list) kept in fp32 behind Casts; says which of them the graph has."""
    import onnx
    from onnxruntime.transformers import float16

    blocked = sorted(set(float16.DEFAULT_OP_BLOCK_LIST) | set(blocked_here))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its "values clipped to fp16 range" notes, per initializer
        model = float16.convert_float_to_float16(
            onnx.load(str(source)), keep_io_types=True, op_block_list=blocked
        )
    _drop_round_trips(model.graph, set(blocked))
    onnx.save(model, str(target))
    kept = sorted({n.op_type for n in model.graph.node} & set(blocked))
    return f"fp16 with fp32 inputs/outputs; kept in fp32: {', '.join(kept) or 'none'}"


FLOAT, FLOAT16 = 1, 10
FP16_MAX = 65504.0


def beyond_fp16(source: Path) -> tuple[str, ...]:
    """A warning naming the constants the fp16 conversion clips to ±65504 (its finite values beyond)."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(source))
    tensors = [(t.name, t) for t in model.graph.initializer]
    tensors += [
        (n.output[0], a.t)
        for n in model.graph.node
        if n.op_type == "Constant"
        for a in n.attribute
        if a.name == "value"
    ]
    clipped = []
    for name, tensor in tensors:
        if tensor.data_type != FLOAT:
            continue
        arr = numpy_helper.to_array(tensor)
        finite = arr[np.isfinite(arr)]
        if finite.size and float(np.abs(finite).max()) > FP16_MAX:
            clipped.append(f"{name} (up to {float(np.abs(finite).max()):.3g})")
    if not clipped:
        return ()
    return (
        f"{len(clipped)} constant(s) hold values beyond fp16's range, clipped to ±65504 in the fp16 graph: "
        f"{', '.join(clipped[:3])}{' …' if len(clipped) > 3 else ''}; parity on the fp16 targets shows "
        "whether it matters (an attention mask of -1e9 still masks; a scale does not survive)",
    )


def _drop_round_trips(graph: Any, blocked: set[str]) -> None:
    """Remove fp32 → fp16 → fp32 Cast pairs between two blocked ops.

    The converter casts every blocked op's output to fp16 and back for the next one, so a chain of
    blocked ops (Pow → ReduceMean → Sqrt) would still overflow in between; the pair is only a loss.
    """

    def cast_to(node: Any) -> int:
        return next((a.i for a in node.attribute if a.name == "to"), 0) if node.op_type == "Cast" else 0

    outputs = {o.name for o in graph.output}
    consumers: dict[str, list[Any]] = {}
    made_by = {o: n.op_type for n in graph.node for o in n.output}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    drop, rename = [], {}
    for down in graph.node:
        after_blocked = cast_to(down) == FLOAT16 and made_by.get(down.input[0]) in blocked  # an fp32 value
        users = consumers.get(down.output[0], []) if after_blocked else []
        kept_names = outputs.isdisjoint([down.output[0], *(u.output[0] for u in users)])  # graph outputs stay
        if users and kept_names and all(cast_to(u) == FLOAT for u in users):
            drop.append(down)
            for up in users:
                drop.append(up)
                rename[up.output[0]] = down.input[0]
    if not drop:
        return
    kept = [n for n in graph.node if all(n is not d for d in drop)]
    for node in kept:
        for i, name in enumerate(node.input):
            if name in rename:
                node.input[i] = rename[name]
    del graph.node[:]
    graph.node.extend(kept)


def check_feeds(feeds: Mapping[str, np.ndarray], model_path: Path, cfg: Config) -> None:
    """Calibration inputs must carry the graph's input names and ranks: else one line, naming the key."""
    import onnx

    graph = onnx.load(str(model_path), load_external_data=False).graph
    inits = {i.name for i in graph.initializer}
    wanted = {vi.name: len(vi.type.tensor_type.shape.dim) for vi in graph.input if vi.name not in inits}
    where = f"{cfg.path}: {'export.calibration' if cfg.export.calibration else 'model.samples'}"
    if set(feeds) != set(wanted):
        raise ConfigError(
            f"{where}: calibration inputs are named {sorted(feeds)}, the graph's inputs {sorted(wanted)}; "
            "name the arrays after the model inputs"
        )
    for name, rank in wanted.items():
        if feeds[name].ndim != rank:
            raise ConfigError(
                f"{where}: {name!r} has shape {list(feeds[name].shape)}, the graph wants rank {rank} "
                "(stacked along the batch axis)"
            )


def derive(cfg: Config, precision: str, source_dir: Path, bundle_dir: Path) -> Manifest:
    """The ``precision`` bundle of the fp32 bundle in ``source_dir``, written to ``bundle_dir``."""
    if precision not in DERIVED:
        raise ConfigError(f"{cfg.path}: export.precisions: unknown precision {precision!r}; known: fp32, "
                          f"{', '.join(DERIVED)}")  # fmt: skip
    fp32 = read_manifest(source_dir)
    if bundle_dir.exists():
        shutil.rmtree(bundle_dir)
    bundle_dir.mkdir(parents=True)
    for entry in source_dir.iterdir():
        if entry.is_dir() and entry.name.startswith(("test_data_set_", "sweep_")):
            shutil.copytree(entry, bundle_dir / entry.name)
    try:
        what, notes = convert(source_dir / MODEL, bundle_dir / MODEL, precision, cfg, cfg.verify.seed)
        finding = CheckResult(precision, Status.PASSED, what, {}, warnings=notes)
    except GateError:
        raise
    except Exception as exc:  # a converter that cannot handle the graph: a failed cell, with why
        why = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"
        finding = CheckResult(precision, Status.FAILED, f"{precision} conversion failed: {why}")
    tol, per_output = cfg.verify.precision_tolerance[precision]
    size = sum(p.stat().st_size for p in bundle_dir.iterdir() if p.name.startswith(MODEL))
    finding = dataclasses.replace(finding, figures={"model_bytes": size})
    findings = tuple(_with_conversion(f, finding) if f.name == "export" else f for f in fp32.findings)
    manifest = dataclasses.replace(
        fp32,
        precision=precision,
        files=hash_files(bundle_dir),
        tolerance=tol,
        tolerance_per_output=dict(per_output),
        findings=findings,
    )
    write_manifest(bundle_dir, manifest)
    return manifest


def _with_conversion(export: CheckResult, conversion: CheckResult) -> CheckResult:
    """The fp32 export finding, followed by the conversion: a failed conversion fails the bundle."""
    status = export.status if conversion.status is Status.PASSED else conversion.status
    return dataclasses.replace(
        export,
        status=status,
        message=f"{export.message}; then {conversion.message}",
        figures={**export.figures, **conversion.figures, "precision": conversion.name},
        warnings=export.warnings + conversion.warnings,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ci_onnx.export.precision")
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("--model", default="", help="The model's name, in a config of several.")
    parser.add_argument("--precision", required=True)
    parser.add_argument("--source", type=Path, required=True)
    parser.add_argument("--bundle-dir", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        from ci_onnx.config import cascade

        derive(cascade.load_one(args.config, args.model), args.precision, args.source, args.bundle_dir)
    except GateError as exc:
        print(f"onnx-gate: error: {exc.message}", file=sys.stderr)
        return exc.exit_code
    return EXIT_PASS


if __name__ == "__main__":
    sys.exit(main())
