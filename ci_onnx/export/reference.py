"""PyTorch, the reference: the model run on copies of the inputs, its outputs matched to the declared names.

A forward may change its inputs in place (``x[:, :k].mul_(s)`` in a preprocessing layer). Each run
gets fresh copies, so the inputs written to the bundle are the ones the references were computed from,
and every run says which inputs it found changed afterwards. Outputs are matched by the names the
model's structure gives them (dict keys, ``ModelOutput`` and namedtuple fields) where every declared
name is one of them, by position otherwise.

The same module gives torch's view of itself on a probe (:func:`self_check`): the model in float64 on
the same inputs, or, where it cannot run in float64, a second float32 run. What torch shows against
itself there is the floor under which a difference between torch and the exported graph proves nothing.
Every run, the float64 copy's included, starts from one snapshot of the model's state
(:mod:`ci_onnx.export.state`): a forward that counts its calls or caches must not make one run differ
from the next, nor the copy from the model it checks.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ci_onnx.contracts.bundle import TensorSpec
from ci_onnx.export import signature
from ci_onnx.export.state import Snapshot

Arrays = Mapping[str, npt.NDArray[np.generic]]


@dataclasses.dataclass(frozen=True)
class Run:
    outputs: dict[str, npt.NDArray[np.generic]]
    """By declared output name; 0-d stays 0-d."""
    mutated: tuple[str, ...] = ()
    """The declared inputs the forward changed in place."""
    structure: tuple[str | None, ...] = ()
    """The name the model's structure gives each returned tensor, in returned order (None: position only)."""


class Torch:
    """Runs ``model`` (eval mode, no grad) as the exporters saw it: ``binding`` places the declared inputs."""

    def __init__(
        self,
        model: Any,
        binding: signature.Binding,
        specs: Sequence[TensorSpec],
        names: Sequence[str],
        snapshot: Snapshot | None = None,
    ):
        """``snapshot``: the state every run starts from (taken here where not given)."""
        self.model = model
        self.snapshot = snapshot or Snapshot.take(model)
        self.binding = binding
        self.specs = tuple(specs)
        self.names = tuple(names)
        self.mutated: dict[str, None] = {}
        """Every input any run so far found changed in place, in the order first seen."""
        self._double: Any = None
        self._double_state: Snapshot | None = None

    def fresh(self) -> Any:
        """The model, put back to the snapshot."""
        self.snapshot.restore(self.model)
        return self.model

    def __call__(self, feeds: Arrays) -> dict[str, npt.NDArray[np.generic]]:
        return self.run(feeds).outputs

    def run(self, feeds: Arrays) -> Run:
        """The model on copies of ``feeds``, from the snapshot."""
        self.fresh()
        return self.call(feeds)

    def call(self, feeds: Arrays) -> Run:
        """The model on copies of ``feeds`` from whatever state it is in now (``stateful`` calls it
        several times in a row)."""
        import torch

        originals = {s.name: np.asarray(feeds[s.name]) for s in self.specs}
        leaves = {name: torch.tensor(arr) for name, arr in originals.items()}  # torch.tensor copies
        with torch.no_grad():
            result = self.binding.call(self.model, leaves)
        mutated = tuple(n for n, arr in originals.items() if _changed(leaves[n], arr))
        self.mutated.update(dict.fromkeys(mutated))
        named = signature.named_leaves(result)
        structure = tuple(n for n, _ in named)
        tensors = match(self.names, named)
        outputs = {name: t.detach().cpu().numpy() for name, t in tensors.items()}
        return Run(outputs, mutated, structure)

    def self_check(self, feeds: Arrays) -> tuple[str, dict[str, npt.NDArray[np.generic]]]:
        """(what was compared, torch's second opinion on ``feeds``): float64, else a second float32 run."""
        import torch

        try:
            if self._double is None:
                self._double = copy.deepcopy(self.fresh()).double().eval()
                self._double_state = Snapshot.take(self._double)
            assert self._double_state is not None
            self._double_state.restore(self._double)
            leaves = {s.name: torch.tensor(_widened(np.asarray(feeds[s.name]))) for s in self.specs}
            with torch.no_grad():
                result = self.binding.call(self._double, leaves)
            tensors = match(self.names, signature.named_leaves(result))
            return "torch float32 against torch float64", {
                n: t.detach().cpu().numpy() for n, t in tensors.items()
            }
        except Exception:  # an op without a float64 kernel, a dtype check in the model: run twice
            return "two torch float32 runs", self(feeds)


def match(declared: Sequence[str], named: Sequence[tuple[str | None, Any]]) -> dict[str, Any]:
    """The returned tensors by declared name: by the structure's names where every declared name is
    one of them (and they are distinct), else by position."""
    names = [n for n, _ in named]
    keyed = {n: t for n, t in named if n is not None}
    if declared and len(keyed) == len(names) == len(set(names)) and set(declared) <= set(keyed):
        return {name: keyed[name] for name in declared}
    return {name: t for name, (_, t) in zip(declared, named, strict=False)}


def _changed(tensor: Any, before: npt.NDArray[np.generic]) -> bool:
    after = tensor.detach().cpu().numpy()
    if after.shape != before.shape:
        return True
    equal_nan = after.dtype.kind in "fc"
    return not np.array_equal(after, before, equal_nan=equal_nan)


def _widened(arr: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
    return np.array(arr, dtype=np.float64) if arr.dtype.kind == "f" else np.array(arr, order="C")
