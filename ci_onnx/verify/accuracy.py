"""Labelled samples and the task metric: top-1 accuracy of a cell and of PyTorch on the same samples.

The convention, in ``model.samples`` (an .npz): beside one array per input, an integer array named
``labels`` holds the class of each sample for the decision output (``verify.decision.output``, or the
model's only output), and ``label:<output>`` names the output it labels. A label array has the
output's shape without its last (class) axis: ``[N]`` for logits ``[N, C]``. Samples without labels
keep today's behaviour: no accuracy check.

At export the labels are written beside the sample set's reference outputs, as ``label_<i>.pb`` for
output ``i`` (hashed into the manifest like every file of the bundle, and copied into each derived
precision's bundle with the test data). PyTorch's accuracy comes from the reference outputs in the
bundle (computed by PyTorch at export), a cell's from the outputs it observed; ``budgets.accuracy_drop``
(absolute points) fails a cell whose accuracy is that much below PyTorch's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ci_onnx.bundle import Manifest
from ci_onnx.config import Config
from ci_onnx.errors import ConfigError
from ci_onnx.results import CheckResult, Observation
from ci_onnx.target import Status

if TYPE_CHECKING:
    from ci_onnx.verify.evidence import Evidence

LABELS = "labels"
PREFIX = "label:"
CHECK = "accuracy"


def label_file(index: int) -> str:
    """The file, in a sample test data set, holding the labels of output ``index``."""
    return f"label_{index}.pb"


def load_labels(
    path: Path, outputs: Sequence[str], decision: str | None, count: int, key: str = "model.samples"
) -> dict[str, np.ndarray]:
    """The label arrays of ``path`` by output name (empty when it has none); bad ones: one line."""
    with np.load(path, allow_pickle=False) as npz:
        found = {name: npz[name] for name in npz.files if name == LABELS or name.startswith(PREFIX)}
    out: dict[str, np.ndarray] = {}
    for name, arr in found.items():
        if name == LABELS:
            output = decision or (outputs[0] if len(outputs) == 1 else "")
            if not output:
                raise ConfigError(
                    f"{key}: {path.name} has `labels`, but the model has {len(outputs)} outputs and no "
                    f"verify.decision; name the output the labels are for: `label:<output>`"
                )
        else:
            output = name.removeprefix(PREFIX)
            if output not in outputs:
                raise ConfigError(
                    f"{key}: {path.name} has {name!r}, but {output!r} is not a declared output "
                    f"({', '.join(outputs)}); name the array label:<output>"
                )
        if output in out:
            raise ConfigError(f"{key}: {path.name} labels {output!r} twice (`labels` and `label:{output}`)")
        if arr.dtype.kind not in "iu":
            raise ConfigError(
                f"{key}: {name!r} in {path.name} is {arr.dtype}; labels are class indices, save them as int64"
            )
        if arr.ndim < 1 or arr.shape[0] != count:
            raise ConfigError(
                f"{key}: {name!r} in {path.name} has shape {list(arr.shape)}: one label per sample "
                f"({count}) along axis 0"
            )
        if arr.size and int(arr.min()) < 0:
            raise ConfigError(f"{key}: {name!r} in {path.name} holds negative classes; labels are indices")
        out[output] = arr.astype(np.int64)
    return out


def labels_of(cfg: Config, samples: Mapping[str, np.ndarray] | None) -> dict[str, np.ndarray]:
    """The labels of ``model.samples`` (already loaded as ``samples``), checked against the config."""
    from ci_onnx.export.inputs import count_of

    m = cfg.model
    if not samples or not m.samples:
        return {}
    decision = cfg.verify.decision.output if cfg.verify.decision else None
    key = f"{cfg.path}: model.samples"
    return load_labels(cfg.resolve(m.samples), m.outputs, decision, count_of(samples, m.inputs), key)


def write_labels(set_dir: Path, outputs: Sequence[str], labels: Mapping[str, np.ndarray]) -> None:
    """``label_<i>.pb`` in the sample test data set, for each labelled output ``i``."""
    from ci_onnx import tensorproto

    for i, name in enumerate(outputs):
        if name in labels:
            tensorproto.save(set_dir / label_file(i), labels[name], name=f"{PREFIX}{name}")


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
