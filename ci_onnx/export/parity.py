"""``reference-parity``: onnxruntime CPU, here in the export environment, against the torch outputs.

It runs on the bundle's own inputs with the verify tolerance, so a mismatch seen later on a target
can be told apart: exporter bug (fails here too) or runtime bug (passes here).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ci_onnx.bundle import Finding, Tolerance
from ci_onnx.target import Status

Arrays = Mapping[str, npt.NDArray[np.generic]]


def compare(
    got: npt.NDArray[np.generic], ref: npt.NDArray[np.generic], tol: Tolerance
) -> dict[str, float | int]:
    """max abs, max rel, and the elements outside |got - ref| <= atol + rtol * |ref|."""
    if got.shape != ref.shape:
        return {"shape_mismatch": 1, "out_of_tolerance": int(ref.size)}
    g = got.astype(np.float64)
    r = ref.astype(np.float64)
    diff = np.abs(g - r)
    bad = ~(diff <= tol.atol + tol.rtol * np.abs(r))  # NaN counts as out of tolerance
    rel = diff / np.maximum(np.abs(r), 1e-12)
    return {
        "max_abs": float(np.nanmax(diff)) if diff.size else 0.0,
        "max_rel": float(np.nanmax(rel)) if rel.size else 0.0,
        "out_of_tolerance": int(bad.sum()),
        "elements": int(ref.size),
    }


def run_chunked(session: Any, feeds: Arrays) -> list[npt.NDArray[np.generic]]:
    """Run ``feeds``; when the graph fixes the batch below the data's, run it in slices and stack."""
    fixed = {i.name: i.shape[0] for i in session.get_inputs() if i.shape and isinstance(i.shape[0], int)}
    count = next(iter(feeds.values())).shape[0] if feeds else 0
    step = min(fixed.values()) if fixed else 0
    if not step or step >= count or count % step:
        return list(session.run(None, dict(feeds)))
    parts = [session.run(None, {k: v[i : i + step] for k, v in feeds.items()}) for i in range(0, count, step)]
    return [np.concatenate([p[j] for p in parts]) for j in range(len(parts[0]))]


def reference_parity(
    model_path: Path,
    sets: Sequence[tuple[str, Arrays, Arrays]],
    tolerance: Tolerance,
    per_output: Mapping[str, Tolerance],
    reference: str = "torch",
) -> Finding:
    """``sets``: (test_data_set directory, inputs, expected outputs) each; ``reference`` made them."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    try:
        session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
    except Exception as exc:
        return Finding(
            "reference-parity",
            Status.FAILED,
            f"onnxruntime {ort.__version__} CPU cannot load the exported model: {_line(exc)}",
        )
    names = [o.name for o in session.get_outputs()]
    figures: dict[str, Any] = {"onnxruntime": ort.__version__}
    failures: list[str] = []
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
            stats = compare(np.asarray(value), np.asarray(expected[name]), tol)
            figures[f"{directory}/{name}"] = stats
            if stats.get("shape_mismatch"):
                failures.append(
                    f"{directory}/{name}: shape {list(np.shape(value))} vs {list(expected[name].shape)}"
                )
            elif stats["out_of_tolerance"]:
                failures.append(
                    f"{directory}/{name}: {stats['out_of_tolerance']} of {stats['elements']} elements out of "
                    f"tolerance (max abs {stats['max_abs']:.3g}, atol {tol.atol:g}, rtol {tol.rtol:g})"
                )
    if failures:
        return Finding(
            "reference-parity",
            Status.FAILED,
            f"onnxruntime CPU disagrees with {reference} on the bundle's inputs, so the model itself is "
            "wrong (not the runtime under test): " + "; ".join(failures[:4]),
            figures,
        )
    return Finding(
        "reference-parity",
        Status.PASSED,
        f"onnxruntime {ort.__version__} CPU matches {reference} on {len(sets)} test data set(s)",
        figures,
    )


def _line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:300]
