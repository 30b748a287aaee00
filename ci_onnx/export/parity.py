"""``reference-parity``: onnxruntime CPU, here in the export environment, against the torch outputs.

It runs on the bundle's own inputs with the verify tolerance, so a mismatch seen later on a target
can be told apart: exporter bug (fails here too) or runtime bug (passes here).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ci_onnx.contracts.bundle import Tolerance
from ci_onnx.contracts.results import CheckResult
from ci_onnx.contracts.target import Status

Arrays = Mapping[str, npt.NDArray[np.generic]]


def run_chunked(session: Any, feeds: Arrays) -> list[npt.NDArray[np.generic]]:
    """Run ``feeds``; when the graph fixes the batch below the data's, run it in slices and stack.

    The graph fixes the batch where every input's axis 0 is the same number: an input whose axis 0
    is fixed beside one whose axis 0 is symbolic (a seq-first RNN's ``h0: [layers, batch, h]`` beside
    ``x: [seq, batch, f]``) does not carry the batch there, and the data is run whole."""
    ins = session.get_inputs()
    fixed = {i.name: i.shape[0] for i in ins if i.shape and isinstance(i.shape[0], int)}
    counts = {np.shape(v)[0] for v in feeds.values() if np.ndim(v)}
    count = counts.pop() if len(counts) == 1 else 0
    step = fixed.popitem()[1] if len(fixed) == len(ins) and len(set(fixed.values())) == 1 else 0
    if not step or step >= count or count % step:
        return list(session.run(None, dict(feeds)))
    parts = [session.run(None, {k: v[i : i + step] for k, v in feeds.items()}) for i in range(0, count, step)]
    if any(np.ndim(value) == 0 for value in parts[0]):  # a 0-d output of a slice is not a slice of it
        return list(session.run(None, dict(feeds)))
    return [np.concatenate([p[j] for p in parts]) for j in range(len(parts[0]))]


def cpu_session(model_path: Path) -> Any:
    """onnxruntime's CPU session on the exported file, quiet: what the export stage checks it with."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    return ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])


def reference_parity(
    model_path: Path,
    sets: Sequence[tuple[str, Arrays, Arrays]],
    tolerance: Tolerance,
    per_output: Mapping[str, Tolerance],
    reference: str = "torch",
    mutated: Sequence[str] = (),
    rerun: Callable[[Arrays], Arrays] | None = None,
) -> CheckResult:
    """``sets``: (test_data_set directory, inputs, expected outputs) each; ``reference`` made them.

    ``mutated``: the inputs the forward changed in place (the references were computed on copies, so
    the stored inputs are the originals): a warning where the graph still agrees, named in the failure
    where it does not. ``rerun``: the reference again, to tell a model that is random in eval (it
    disagrees with itself) from a wrong graph, on a failure.
    """
    import onnxruntime as ort

    from ci_onnx.verify.compare import describe, parity

    try:
        session = cpu_session(model_path)
    except Exception as exc:
        return CheckResult(
            "reference-parity",
            Status.FAILED,
            f"onnxruntime {ort.__version__} CPU cannot load the exported model: {_line(exc)}",
        )
    names = [o.name for o in session.get_outputs()]
    figures: dict[str, Any] = {"onnxruntime": ort.__version__}
    if mutated:
        figures["mutated_inputs"] = list(mutated)
    failures: list[str] = []
    noise: list[bool | None] = []  # per failing output: its error is float32 noise (None: not numeric)
    unstable = ""
    for directory, feeds, expected in sets:
        try:
            got = run_chunked(session, feeds)
        except Exception as exc:
            failures.append(f"{directory}: onnxruntime failed to run it: {_line(exc)}")
            continue
        for name, value in zip(names, got, strict=True):
            if name not in expected:
                continue
            tol = per_output.get(name, tolerance)
            stats = parity(name, np.asarray(value), np.asarray(expected[name]), tol)
            noise.append(_within_noise(stats, np.asarray(expected[name])))
            figures[f"{directory}/{name}"] = {
                k: v for k, v in dataclasses.asdict(stats).items() if k not in ("output", "atol", "rtol")
            }
            if stats.shape_mismatch:
                failures.append(f"{directory}/{name}: {stats.shape_mismatch}")
            elif not stats.passed:
                failures.append(f"{directory}/{name}: {describe(stats)}")
        if failures and rerun is not None and not unstable:
            unstable = _self_disagreement(rerun, feeds, expected, tolerance, per_output)
    changed = ", ".join(repr(n) for n in mutated)
    failing = [n for n in noise if n is not None]  # each output failure, not a run that failed
    if failures and len(failing) == len(failures) and all(failing):
        figures["float32_noise"] = True
        return CheckResult(
            "reference-parity",
            Status.FAILED,
            f"onnxruntime CPU and {reference} agree to within {NOISE:g} of each output's largest value, "
            "the error float32 arithmetic in another order makes, and the tolerance is too tight to "
            "absorb it: loosen verify.tolerance (this says nothing against the model): "
            + "; ".join(failures[:4]),
            figures,
        )
    if failures:
        why = (
            "by more than float32 arithmetic explains, so the exported graph is wrong (not the runtime "
            "under test)"
        )
        if unstable:
            why = (
                f"and {reference} disagrees with itself on the same inputs ({unstable}): the model is random "
                "in eval (noise or dropout left on), so no runtime can match it"
            )
        elif mutated:
            why = (
                f"the forward changes input(s) {changed} in place, and the graph does not compute what "
                f"{reference} computes from the original inputs (an in-place edit through a view, "
                "x.narrow(...).mul_(), is lost by the trace); clone the input before editing it"
            )
        return CheckResult(
            "reference-parity",
            Status.FAILED,
            f"onnxruntime CPU disagrees with {reference} on the bundle's inputs, {why}: "
            + "; ".join(failures[:4]),
            figures,
        )
    notes: tuple[str, ...] = ()
    if mutated:
        notes = (
            f"the forward changes input(s) {changed} in place: a caller's tensor is changed by {reference} "
            "but not by the exported graph; the graph agrees with it on fresh copies",
        )
    return CheckResult(
        "reference-parity",
        Status.PASSED,
        f"onnxruntime {ort.__version__} CPU matches {reference} on {len(sets)} test data set(s)",
        figures,
        warnings=notes,
    )


NOISE = 1e-4
"""The error of float32 arithmetic done in another order, relative to an output's largest magnitude:
a few ulps (1.2e-7 each) grown through a deep graph reach 1e-6 … 1e-5; a wrong graph (a dropout left
in train mode, a frozen branch) is off by a share of the values themselves."""


def _within_noise(stats: Any, ref: np.ndarray) -> bool | None:
    """Whether a failing output's error is within :data:`NOISE` (None for one that passed)."""
    if stats.passed:
        return None
    if stats.shape_mismatch or stats.nonfinite_mismatches or ref.dtype.kind not in "fc" or not ref.size:
        return False
    finite = np.abs(ref[np.isfinite(ref)])
    scale = float(finite.max()) if finite.size else 0.0
    return bool(stats.max_abs <= NOISE * scale)


def _self_disagreement(
    rerun: Callable[[Arrays], Arrays],
    feeds: Arrays,
    expected: Arrays,
    tolerance: Tolerance,
    per_output: Mapping[str, Tolerance],
) -> str:
    """How a second reference run on the same inputs differs from the first; "" where it does not."""
    from ci_onnx.verify.compare import parity

    try:
        again = rerun(feeds)
    except Exception:
        return ""
    for name, value in again.items():
        if name in expected:
            p = parity(name, np.asarray(value), np.asarray(expected[name]), per_output.get(name, tolerance))
            if not p.passed:
                return f"output {name!r}: two runs differ by max abs {p.max_abs:.3g}"
    return ""


def _line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:300]
