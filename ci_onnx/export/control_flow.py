"""``control-flow``: a branch the export may have frozen is a suspect; a differential run convicts it.

dynamo stops on a branch that depends on a tensor value (no file is written: that fails at once).
TorchScript warns (a TracerWarning outside torch's own code) and bakes in what the example took;
most such warnings freeze nothing that matters (a check on a fixed channel count, ``q_length > 1``).
So the gate runs torch and the exported graph (onnxruntime CPU) on probes that change the values a
branch could depend on, drawn like the declared inputs: fresh random draws, the real samples, those
negated and scaled, and each input at the bottom and the top of its range. Sizes are the sweep's
(sweep.py, under ``dynamic-axes``): a frozen size is not a frozen branch.

A divergence convicts only beyond what torch shows against itself on that probe (``probing``): a
constant probe under a normalisation is ill-conditioned, and proves nothing. And where the other
exporter (dynamo, which has no trace to freeze a branch in) reproduces the divergence, the trace is
not to blame: that is a warning naming both. Else the check fails naming the branch (file:line) and
the probe; a suspect that never diverges is a warning.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ci_onnx.contracts.bundle import TensorSpec
from ci_onnx.contracts.results import CheckResult
from ci_onnx.contracts.target import Status
from ci_onnx.export import inputs
from ci_onnx.export.probing import Comparer, Outcome, Probe, Verdict

Arrays = dict[str, npt.NDArray[np.generic]]
Reproduce = Callable[[Arrays], Mapping[str, Any] | None]
"""The other exporter's graph on a probe's inputs; None where it has no graph (its export failed)."""

SCALE = 10.0
"""The scaled probe multiplies float inputs by this: large enough to cross a threshold, small enough
that float32 rounding stays inside the tolerance."""


def probes(
    specs: Sequence[TensorSpec],
    batch: int,
    dim_sizes: Mapping[str, int],
    seed: int,
    samples: Arrays | None = None,
) -> list[Probe]:
    """Probes at the example's sizes that vary values: draws like the declared inputs, then extremes."""
    rng_seed = seed + 7919
    base = inputs.random_inputs(specs, batch, rng_seed, dim_sizes)
    out = [
        Probe("a fresh random draw", inputs.random_inputs(specs, batch, rng_seed + 1, dim_sizes)),
        Probe("another random draw", inputs.random_inputs(specs, batch, rng_seed + 2, dim_sizes)),
    ]
    if samples is not None:
        out.append(Probe("the real samples", dict(samples)))
    out += [
        Probe("float inputs negated", {s.name: _negated(s, base[s.name]) for s in specs}),
        Probe(f"float inputs scaled by {SCALE:g}", {s.name: _scaled(s, base[s.name]) for s in specs}),
        Probe("every input at its lowest (zeros)", {s.name: _extreme(s, base[s.name], True) for s in specs}),
        Probe("every input at its highest (ones)", {s.name: _extreme(s, base[s.name], False) for s in specs}),
    ]  # fmt: skip
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


def differential(
    comparer: Comparer | str,
    suspects: Sequence[str],
    candidates: Sequence[Probe],
    reproduce: Reproduce | None = None,
    other: str = "dynamo",
) -> CheckResult:
    """Judge each probe; the first divergence the other exporter does not reproduce convicts the suspects.

    ``comparer`` is why none could be made (onnxruntime cannot load the file) when it is a string.
    """
    if isinstance(comparer, str):
        return CheckResult(
            "control-flow",
            Status.SKIPPED,
            f"{len(suspects)} suspect branch(es), not judged: onnxruntime CPU cannot load the model "
            f"({comparer}); see reference-parity",
            {"suspects": len(suspects)},
            warnings=tuple(suspects),
        )
    ran: list[str] = []
    skipped: list[str] = []
    notes: list[str] = []
    for probe in candidates:
        outcome = comparer.judge(probe)
        if outcome.verdict is Verdict.INCONCLUSIVE:
            skipped.append(f"{probe.label} ({outcome.detail})")
            continue
        if outcome.verdict is Verdict.DIVERGES:
            again = _reproduced(comparer, probe, reproduce)
            if not again:
                return _convicted(suspects, outcome, ran)
            notes.append(
                f"the graph diverges from torch on {probe.label} ({outcome.detail}), and so does the {other} "
                f"export, which has no trace to freeze a branch in ({again}): not blamed on the branch"
            )
            skipped.append(f"{probe.label} (reproduced by {other})")
            continue
        ran.append(probe.label)
    figures: dict[str, Any] = {"suspects": len(suspects), "probes": ran, "skipped_probes": skipped}
    if not ran:
        return CheckResult(
            "control-flow",
            Status.PASSED,
            f"{len(suspects)} suspect branch(es), not judged: no probe gave evidence",
            figures,
            warnings=(*suspects, *notes),
        )
    return CheckResult(
        "control-flow",
        Status.PASSED,
        f"{len(suspects)} suspect(s) the trace warned about (a tensor made a Python value or a constant), "
        f"but the graph matched torch on {len(ran)} probe(s) that vary values; see warnings",
        figures,
        warnings=(*suspects, *notes),
    )


def _reproduced(comparer: Comparer, probe: Probe, reproduce: Reproduce | None) -> str:
    """How the other exporter's graph diverges on ``probe`` as this one does; "" where it does not."""
    if reproduce is None:
        return ""
    try:
        theirs = reproduce(probe.feeds)
    except Exception:
        return ""
    if theirs is None:
        return ""
    try:
        expected = dict(comparer.torch_run(probe.feeds))
    except Exception:
        return ""
    outcome = comparer.weigh(probe, expected, theirs)
    return outcome.detail if outcome.verdict is Verdict.DIVERGES else ""


def _convicted(suspects: Sequence[str], outcome: Outcome, ran: Sequence[str]) -> CheckResult:
    return CheckResult(
        "control-flow",
        Status.FAILED,
        f"the trace froze a branch: the graph disagrees with torch on {outcome.probe}: {outcome.detail}; "
        f"suspect(s): {'; '.join(suspects[:3])}; use torch.where or torch.cond, branch on shapes only, or "
        "the dynamo exporter",
        {"suspects": len(suspects), "diverged_on": outcome.probe, "probes_before": list(ran)},
        warnings=tuple(suspects),
    )
