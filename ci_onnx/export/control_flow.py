"""``control-flow``: a branch the export may have frozen is a suspect; a differential run convicts it.

dynamo stops on a branch that depends on a tensor value (no file is written: that fails at once).
TorchScript warns (a TracerWarning outside torch's own code) and bakes in what the example took;
most such warnings freeze nothing that matters (a check on a fixed channel count, ``q_length > 1``).
So the gate runs torch and the exported graph (onnxruntime CPU) on probes that change what a branch
could depend on: other values (zeros, ones, negated, scaled, a fresh draw) and every declared dynamic
dim at other sizes (1, an odd one, a large one). It fails only when they disagree, naming the branch
(file:line) and the probe; a suspect that never diverges is a warning.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ci_onnx.bundle import TensorSpec, Tolerance
from ci_onnx.export import inputs
from ci_onnx.results import CheckResult
from ci_onnx.target import Status

Arrays = dict[str, npt.NDArray[np.generic]]
TorchRun = Callable[[Arrays], Mapping[str, npt.NDArray[np.generic]]]

SCALE = 10.0
"""The scaled probe multiplies float inputs by this: large enough to cross a threshold, small enough
that float32 rounding stays inside the tolerance."""


@dataclasses.dataclass(frozen=True)
class Probe:
    label: str
    feeds: Arrays


def probes(
    specs: Sequence[TensorSpec],
    dynamic_axes: Mapping[str, Mapping[str, str]],
    batch: int,
    dim_sizes: Mapping[str, int],
    seed: int,
) -> list[Probe]:
    """Value probes at the example's sizes, then one probe per other size of each declared dynamic dim."""
    rng_seed = seed + 7919
    base = inputs.random_inputs(specs, batch, rng_seed, dim_sizes)
    out = [
        Probe("every input at its lowest (zeros)", {s.name: _extreme(s, base[s.name], True) for s in specs}),
        Probe("every input at its highest (ones)", {s.name: _extreme(s, base[s.name], False) for s in specs}),
        Probe("float inputs negated", {s.name: _negated(s, base[s.name]) for s in specs}),
        Probe(f"float inputs scaled by {SCALE:g}", {s.name: _scaled(s, base[s.name]) for s in specs}),
        Probe("a fresh random draw", inputs.random_inputs(specs, batch, rng_seed + 1, dim_sizes)),
    ]  # fmt: skip
    sizes = {**dim_sizes}
    for spec in specs:
        if inputs.batch_axis(spec):
            sizes.setdefault(str(spec.shape[0]), batch)
    symbols = list(dict.fromkeys(n for axes in dynamic_axes.values() for n in axes.values()))
    for symbol in symbols:
        if symbol not in sizes:
            continue
        now = int(sizes[symbol])
        for size in dict.fromkeys((1, 2 * now + 1, 4 * now)):
            if size == now:
                continue
            feeds = _resized(specs, dynamic_axes, symbol, size, batch, sizes, rng_seed + size)
            if feeds is not None:
                out.append(Probe(f"{symbol} = {size}", feeds))
    return out


def _extreme(spec: TensorSpec, like: npt.NDArray[np.generic], low: bool) -> npt.NDArray[np.generic]:
    dtype = np.dtype(spec.dtype)
    if dtype == np.bool_:
        return np.full(like.shape, not low, dtype=np.bool_)
    if spec.value_range is not None:
        lo, hi = spec.value_range
        value = lo if low else (hi - 1 if dtype.kind in "iu" else hi)
        return np.full(like.shape, value, dtype=dtype)
    return np.full(like.shape, 0 if low else 1, dtype=dtype)


def _negated(spec: TensorSpec, like: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
    if np.dtype(spec.dtype).kind != "f":
        return like
    if spec.value_range is not None:
        lo, hi = spec.value_range
        return (lo + hi - np.asarray(like, np.float64)).astype(like.dtype)
    return (-np.asarray(like, np.float64)).astype(like.dtype)


def _scaled(spec: TensorSpec, like: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
    if np.dtype(spec.dtype).kind != "f" or spec.value_range is not None:
        return like
    return (np.asarray(like, np.float64) * SCALE).astype(like.dtype)


def _resized(
    specs: Sequence[TensorSpec],
    dynamic_axes: Mapping[str, Mapping[str, str]],
    symbol: str,
    size: int,
    batch: int,
    sizes: Mapping[str, int],
    seed: int,
) -> Arrays | None:
    """Random inputs where every axis declared as ``symbol`` has ``size``; the others as in the example."""
    rng_specs = []
    for spec in specs:
        axes = dynamic_axes.get(spec.name, {})
        shape = list(inputs.concrete_shape(spec, batch, sizes))
        for axis, name in axes.items():
            if name == symbol and int(axis) < len(shape):
                shape[int(axis)] = size
        rng_specs.append(dataclasses.replace(spec, shape=tuple(shape)))
    return inputs.random_inputs(rng_specs, batch, seed, {})


def differential(
    model_path: Path,
    suspects: Sequence[str],
    torch_run: TorchRun,
    candidates: Sequence[Probe],
    tolerance: Tolerance,
    per_output: Mapping[str, Tolerance],
) -> CheckResult:
    """Run torch and onnxruntime CPU on each probe; the first disagreement convicts the suspects."""
    from ci_onnx.export.parity import cpu_session
    from ci_onnx.verify.compare import describe, parity

    try:
        session = cpu_session(model_path)
    except Exception as exc:
        return CheckResult(
            "control-flow",
            Status.SKIPPED,
            f"{len(suspects)} suspect branch(es), not judged: onnxruntime CPU cannot load the model "
            f"({_line(exc)}); see reference-parity",
            {"suspects": len(suspects)},
            warnings=tuple(suspects),
        )
    names = [o.name for o in session.get_outputs()]
    graph_inputs = {i.name for i in session.get_inputs()}
    ran: list[str] = []
    skipped: list[str] = []
    for probe in candidates:
        try:
            expected = torch_run(probe.feeds)
        except Exception as exc:  # the model itself rejects this input: no evidence either way
            skipped.append(f"{probe.label} (torch: {type(exc).__name__})")
            continue
        try:
            got = session.run(None, {k: v for k, v in probe.feeds.items() if k in graph_inputs})
        except Exception as exc:
            return _convicted(suspects, probe, f"onnxruntime failed to run it ({_line(exc)})", ran)
        for name, value in zip(names, got, strict=True):
            if name not in expected:
                continue
            p = parity(name, np.asarray(value), np.asarray(expected[name]), per_output.get(name, tolerance))
            if not p.passed:
                why = p.shape_mismatch or describe(p)
                return _convicted(suspects, probe, f"output {name!r}: {why}", ran)
        ran.append(probe.label)
    figures: dict[str, Any] = {"suspects": len(suspects), "probes": ran, "skipped_probes": skipped}
    if not ran:
        return CheckResult(
            "control-flow",
            Status.PASSED,
            f"{len(suspects)} suspect branch(es), not judged: torch rejected every probe",
            figures,
            warnings=tuple(suspects),
        )
    return CheckResult(
        "control-flow",
        Status.PASSED,
        f"{len(suspects)} suspect(s) the trace warned about (a tensor made a Python value or a constant), "
        f"but the graph matched torch on {len(ran)} probe(s) that vary values and dynamic dims; see warnings",
        figures,
        warnings=tuple(suspects),
    )


def _convicted(suspects: Sequence[str], probe: Probe, why: str, ran: Sequence[str]) -> CheckResult:
    return CheckResult(
        "control-flow",
        Status.FAILED,
        f"the trace froze a branch: the graph disagrees with torch on {probe.label}: {why}; suspect(s): "
        f"{'; '.join(suspects[:3])}; use torch.where or torch.cond, branch on shapes only, or the dynamo "
        "exporter",
        {"suspects": len(suspects), "diverged_on": probe.label, "probes_before": list(ran)},
        warnings=tuple(suspects),
    )


def _line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:300]
