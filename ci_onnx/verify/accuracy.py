"""The task metric on labelled samples: top-1 accuracy of a cell and of PyTorch on the same samples.

The labels' format is ci_onnx.contracts.labels; samples without labels keep today's behaviour: no accuracy
check. PyTorch's accuracy comes from the reference outputs in the bundle (computed by PyTorch at
export), a cell's from the outputs it observed; ``budgets.accuracy_drop`` (absolute points) fails a
cell whose accuracy is that much below PyTorch's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ci_onnx.contracts.bundle import Manifest
from ci_onnx.contracts.results import CheckResult, Observation
from ci_onnx.contracts.target import Status
from ci_onnx.verify.context import Context

if TYPE_CHECKING:
    from ci_onnx.verify.evidence import Evidence

CHECK = "accuracy"


def top1(scores: np.ndarray, labels: np.ndarray) -> tuple[int, int]:
    """(correct, total) of the argmax along the last axis against ``labels``."""
    if scores.ndim < 1 or scores.shape[:-1] != labels.shape:
        raise ValueError(f"scores of shape {list(scores.shape)} do not fit labels of {list(labels.shape)}")
    predicted = np.argmax(np.nan_to_num(scores.astype(np.float64), nan=-np.inf), axis=-1)
    return int((predicted == labels).sum()), int(labels.size)


def checks(manifest: Manifest, obs: Observation, evidence: Evidence, budget: float) -> list[CheckResult]:
    """One ``accuracy`` check per labelled output of the bundle; none for unlabelled samples."""
    from ci_onnx.verify import decode
    from ci_onnx.verify.evidence import value

    found = [
        (directory, output, labels)
        for directory, by_output in evidence.labels.items()
        for output, labels in by_output.items()
    ]
    result = []
    for directory, output, labels_found in found:
        name = CHECK if len(found) == 1 else f"{CHECK}[{output}]"
        try:
            labels = np.asarray(value(labels_found)).astype(np.int64)
            ref = np.asarray(value(evidence.all_reference.get(directory, {}).get(output)))
            torch_correct, total = top1(ref, labels)
        except (decode.DecodeError, ValueError) as exc:
            result.append(CheckResult(name, Status.ERROR, f"the bundle's labels cannot be read: {exc}"))
            continue
        if output not in obs.outputs.get(directory, {}):
            why = obs.run_errors.get(directory, f"the model gave no output {output!r}")
            result.append(CheckResult(name, Status.FAILED, f"no accuracy: {directory}: {why}"))
            continue
        try:
            got = value(evidence.observed.get(directory, {}).get(output))
            correct, _ = top1(np.asarray(got), labels)
        except (decode.DecodeError, ValueError) as exc:
            result.append(CheckResult(name, Status.FAILED, f"no accuracy: {directory}: {exc}"))
            continue
        result.append(verdict(name, output, correct, torch_correct, total, budget))
    return result


def verdict(
    name: str, output: str, correct: int, torch_correct: int, total: int, budget: float
) -> CheckResult:
    """The accuracy check: failed when the cell is more than ``budget`` points below PyTorch."""
    accuracy = 100.0 * correct / total if total else 0.0
    reference = 100.0 * torch_correct / total if total else 0.0
    drop = reference - accuracy
    figures: dict[str, Any] = {
        "output": output,
        "samples": total,
        "correct": correct,
        "accuracy": round(accuracy, 4),
        "pytorch_correct": torch_correct,
        "pytorch_accuracy": round(reference, 4),
        "drop_points": round(drop, 4),
        "budget_points": budget,
    }
    text = (
        f"top-1 on {total} labelled samples of {output!r}: {accuracy:.2f} % ({correct}), PyTorch "
        f"{reference:.2f} % ({torch_correct})"
    )
    if drop > budget + 1e-9:
        return CheckResult(
            name,
            Status.FAILED,
            f"{text}: {drop:.2f} points lost, {drop - budget:.2f} more than budgets.accuracy_drop "
            f"({budget:g})",
            figures,
        )
    how = f"{drop:.2f} points lost" if drop > 0 else f"{-drop:.2f} points gained" if drop < 0 else "no loss"
    return CheckResult(
        name, Status.PASSED, f"{text}: {how}, within budgets.accuracy_drop ({budget:g})", figures
    )


def check(ctx: Context) -> list[CheckResult]:
    """The registry's entry (verify/judge.CHECKS)."""
    return checks(ctx.manifest, ctx.obs, ctx.evidence, ctx.options.accuracy_drop)
