"""Labelled samples: the class of each sample, beside its inputs in ``model.samples``, and in the bundle.

The convention, in ``model.samples`` (an .npz): beside one array per input, an integer array named
``labels`` holds the class of each sample for the decision output (``verify.decision.output``, or the
model's only output), and ``label:<output>`` names the output it labels. A label array has the
output's shape without its last (class) axis: ``[N]`` for logits ``[N, C]``.

At export the labels are written beside the sample set's reference outputs, as ``label_<i>.pb`` for
output ``i`` (hashed into the manifest like every file of the bundle, and copied into each derived
precision's bundle with the test data). Export writes them, the verify stage reads them
(ci_onnx.verify.evidence) and the accuracy check judges them (ci_onnx.verify.accuracy): the format
lives here, below all three.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from ci_onnx.contracts.errors import ConfigError

LABELS = "labels"
PREFIX = "label:"


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


def write_labels(set_dir: Path, outputs: Sequence[str], labels: Mapping[str, np.ndarray]) -> None:
    """``label_<i>.pb`` in the sample test data set, for each labelled output ``i``."""
    from ci_onnx.contracts import tensorproto

    for i, name in enumerate(outputs):
        if name in labels:
            tensorproto.save(set_dir / label_file(i), labels[name], name=f"{PREFIX}{name}")
