"""What a model keeps between calls: a snapshot of its state, put back before every torch run.

The state is every parameter and buffer and every plain attribute of its modules (numbers, strings,
tensors, arrays and lists, tuples, dicts and sets of them, ``None``): where a counter, a running
statistic or a cache lives. The exported graph freezes that state at export time, so a forward that
changes it computes something the graph never will. Every torch run the export makes (references,
the float64 self-check, probes, sweeps) starts from the same snapshot, so no copy drifts from the
model it judges, and ``stateful`` calls the model twice on the same inputs from it and compares.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ci_onnx.contracts.bundle import Tolerance
from ci_onnx.contracts.results import CheckResult
from ci_onnx.contracts.target import Status

CALLS = 3
"""How many calls ``stateful`` makes on the same inputs: a cache filled by the first call is read by
the second; a counter that changes a threshold may need one more."""

_PLAIN = (bool, int, float, complex, str, bytes, type(None))


@dataclasses.dataclass(frozen=True)
class Snapshot:
    """A model's state: tensors by qualified name, plain attributes by (module, attribute)."""

    tensors: dict[str, Any]
    attributes: dict[tuple[str, str], Any]

    @classmethod
    def take(cls, model: Any) -> Snapshot:
        return cls(_tensors(model), _attributes(model))

    def restore(self, model: Any) -> None:
        """Put the state back: tensors copied in place (shared ones stay shared), attributes reset and
        the ones a call added removed."""
        import torch

        modules = dict(model.named_modules())
        live = _tensor_refs(model)
        with torch.no_grad():
            for name, saved in self.tensors.items():
                tensor = live.get(name)
                if tensor is not None and tensor.shape == saved.shape and tensor.dtype == saved.dtype:
                    if not _equal(tensor, saved):
                        tensor.copy_(saved)
                    continue
                owner, _, leaf = name.rpartition(".")
                module = modules.get(owner)
                if module is None:
                    continue
                table = module._parameters if leaf in module._parameters else module._buffers
                table[leaf] = (
                    torch.nn.Parameter(saved.clone(), requires_grad=False)
                    if table is module._parameters
                    else saved.clone()
                )
        now = _attributes(model, copies=False)
        for key in now.keys() - self.attributes.keys():
            owner, attr = key
            if owner in modules:
                delattr(modules[owner], attr)
        for (owner, attr), saved in self.attributes.items():
            if owner in modules and not _equal(now.get((owner, attr), _MISSING), saved):
                setattr(modules[owner], attr, copy.deepcopy(saved))

    def changes(self, model: Any) -> list[str]:
        """What differs in ``model`` from this snapshot, named as a reader finds it in the code."""
        out = []
        live = _tensor_refs(model)
        for name, saved in self.tensors.items():
            if name in live and not _equal(live[name], saved):
                out.append(f"{_kind(model, name)} {name!r}")
        now = _attributes(model, copies=False)
        for key in sorted(self.attributes.keys() | now.keys()):
            before, after = self.attributes.get(key, _MISSING), now.get(key, _MISSING)
            if not _equal(before, after):
                what = "attribute" if before is not _MISSING else "attribute added"
                out.append(f"{what} {'.'.join(p for p in key if p)!r}")
        return out


class _Missing:
    pass


_MISSING = _Missing()


def _tensor_refs(model: Any) -> dict[str, Any]:
    named = dict(model.named_parameters(remove_duplicate=False))
    named.update(dict(model.named_buffers(remove_duplicate=False)))
    return {k: v for k, v in named.items() if v is not None}


def _tensors(model: Any) -> dict[str, Any]:
    return {name: t.detach().clone() for name, t in _tensor_refs(model).items()}


def _kind(model: Any, name: str) -> str:
    return "parameter" if name in dict(model.named_parameters(remove_duplicate=False)) else "buffer"


def _internal() -> frozenset[str]:
    import torch

    return frozenset(vars(torch.nn.Module()))


def _attributes(model: Any, copies: bool = True) -> dict[tuple[str, str], Any]:
    """Each module's plain attributes (not its own bookkeeping); deep copies where ``copies``."""
    internal = _internal()
    out: dict[tuple[str, str], Any] = {}
    for owner, module in model.named_modules(remove_duplicate=False):
        for attr, value in vars(module).items():
            if attr in internal or not _plain(value):
                continue
            try:
                out[(owner, attr)] = copy.deepcopy(value) if copies else value
            except Exception:  # a tensor subclass or an array of objects that will not copy: not state
                continue
    return out


def _plain(value: Any, depth: int = 0) -> bool:
    import torch

    if depth > 4:
        return False
    if isinstance(value, (*_PLAIN, torch.Tensor, np.ndarray, np.generic)):
        return not isinstance(value, torch.nn.Parameter)
    if isinstance(value, list | tuple | set | frozenset):
        return all(_plain(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(_plain(k, depth + 1) and _plain(v, depth + 1) for k, v in value.items())
    return False


def _equal(a: Any, b: Any) -> bool:
    import torch

    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):  # a Parameter and its saved copy
        return a.dtype == b.dtype and _equal(_numpy(a), _numpy(b))
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        same = a.shape == b.shape and a.dtype == b.dtype
        return same and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    try:
        return bool(a == b)
    except Exception:
        return False


def _numpy(tensor: Any) -> np.ndarray:
    import torch

    t = tensor.detach().cpu()
    return (t.float() if t.dtype == torch.bfloat16 else t).numpy()


Outputs = Mapping[str, Any]


def stateful(
    model: Any,
    snapshot: Snapshot,
    call: Callable[[], Outputs],
    tolerance: Tolerance,
    per_output: Mapping[str, Tolerance],
) -> CheckResult:
    """``stateful``: ``call`` (the model on fixed inputs) made CALLS times in a row from ``snapshot``,
    then once more from the snapshot again.

    Fails where a later call's outputs differ from the first's beyond the tolerance: the state its
    forward changes reaches its outputs (named), or, where nothing it keeps changed, torch disagrees
    with itself on the same input from the same state (a random op in eval). A state change that never
    reaches the outputs is a warning. The model is left at the snapshot.
    """
    snapshot.restore(model)
    try:
        runs = [dict(call()) for _ in range(CALLS)]
        changed = snapshot.changes(model)
        snapshot.restore(model)
        again = dict(call())
    except Exception as exc:  # the model rejects the inputs: reference-parity says so
        return CheckResult(
            "stateful", Status.SKIPPED, f"not judged: torch failed on the inputs ({type(exc).__name__})"
        )
    finally:
        snapshot.restore(model)
    figures: dict[str, Any] = {"calls": CALLS}
    if changed:
        figures["changed"] = changed[:20]
    state = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
    for index, later in enumerate(runs[1:], start=2):
        off = _differs(runs[0], later, tolerance, per_output)
        if off and changed:
            return CheckResult(
                "stateful",
                Status.FAILED,
                f"the forward changes {state}, and call {index} on the same inputs gives other outputs "
                f"({off}); the exported graph keeps the state it had at export time, so it computes "
                "only the first call: keep state out of forward in eval, or make it an input and output",
                {**figures, "diverges_at_call": index},
            )
    off = next(
        (d for d in (_differs(runs[0], r, tolerance, per_output) for r in [*runs[1:], again]) if d), ""
    )
    if off:
        return CheckResult(
            "stateful",
            Status.FAILED,
            f"torch disagrees with itself on the same input from the same state ({off}): a random op in "
            "eval (torch.rand*, dropout with training=True), or state kept outside the model's modules; "
            "no runtime can reproduce it",
            {**figures, "nondeterministic": True},
        )
    if changed:
        return CheckResult(
            "stateful",
            Status.PASSED,
            f"the outputs of {CALLS} calls on the same inputs agree",
            figures,
            warnings=(
                f"the forward changes {state}, which did not change the outputs of {CALLS} calls on the "
                "same inputs; the exported graph keeps the value it had at export time",
            ),
        )
    return CheckResult(
        "stateful",
        Status.PASSED,
        f"the forward changes no state, and {CALLS} calls on the same inputs agree",
        figures,
    )


def _differs(
    first: Outputs, later: Outputs, tolerance: Tolerance, per_output: Mapping[str, Tolerance]
) -> str:
    from ci_onnx.verify.compare import describe, values

    for name, ref in first.items():
        if name not in later:
            continue
        p = values(name, later[name], ref, per_output.get(name, tolerance))
        if not p.passed:
            return f"output {name!r}: {p.shape_mismatch or describe(p)}"
    return ""
