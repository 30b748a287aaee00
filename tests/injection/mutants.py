"""Mechanical mutations of healthy corpus models: the defects real code contains, one at a time.

A factory name is ``<model>__<mutation>`` (``bert__inplace``), or ``<model>__<mutation>_<axis>`` for
the mutations that act along one axis of the first output (``bert__loop_1``). Each wraps the healthy
model of tests/corpus/models/zoo.py and keeps its forward signature, so the same config binds it:

- ``inplace``: the forward edits its first input in place through a view (``x.narrow(...).mul_()``,
  as preprocessing layers do) before the model sees it;
- ``reorder``: the outputs come back as a dict in the reverse order of the model's own names;
- ``loop_<axis>``: a Python loop over a dynamic dim of the first output (a recurrence along it; one
  step per sample on the batch axis);
- ``baked_<axis>``: that dim made a Python int (``int(y.shape[axis])``) and used to build a tensor;
- ``random``: noise drawn in eval (``torch.randn_like``);
- ``fp16``: constants beyond fp16's range (``y * 2e5 / 1e5``), harmless in fp32;
- ``counter``: a call counter in a buffer that scales the output (an annealed temperature);
- ``running``: a running mean of the output updated in ``forward`` in eval, and subtracted;
- ``cache``: the first call's output mean kept in a plain Python attribute and subtracted later.
"""

from __future__ import annotations

import importlib.util
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

ZOO = Path(__file__).resolve().parents[1] / "corpus" / "models" / "zoo.py"

MUTATIONS = ("inplace", "reorder", "loop", "baked", "random", "fp16", "counter", "running", "cache")


def _zoo() -> Any:
    spec = importlib.util.spec_from_file_location("injection_zoo", ZOO)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def wrap(
    inner: nn.Module,
    edit_inputs: Callable[[list[Any]], None] | None = None,
    edit_output: Callable[[Any], Any] | None = None,
    keeper: nn.Module | None = None,
) -> nn.Module:
    """``inner`` behind a forward of the same signature that applies the edits; ``keeper``: a module
    holding the state an edit keeps between calls, made part of the model."""
    signature = inspect.signature(inner.forward)

    class Mutant(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = inner
            self.keeper = keeper

        def forward(self, *args: Any, **kwargs: Any) -> Any:
            if edit_inputs is not None:
                edit_inputs([*args, *kwargs.values()])
            out = self.inner(*args, **kwargs)
            return edit_output(out) if edit_output is not None else out

    me = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    Mutant.forward.__signature__ = signature.replace(parameters=[me, *signature.parameters.values()])  # type: ignore[attr-defined]
    return Mutant()


def _tensors(values: list[Any]) -> list[torch.Tensor]:
    out: list[torch.Tensor] = []
    for v in values:
        if isinstance(v, torch.Tensor):
            out.append(v)
        elif isinstance(v, (tuple, list)):
            out += _tensors(list(v))
        elif isinstance(v, dict):
            out += _tensors(list(v.values()))
    return out


def edit_in_place(values: list[Any]) -> None:
    x = _tensors(values)[0]
    head = x.narrow(-1, 0, max(1, x.shape[-1] // 2))
    if x.dtype.is_floating_point:
        head.mul_(0.5)
    else:
        head.fill_(1)


def on_first(out: Any, fn: Callable[[torch.Tensor], torch.Tensor]) -> Any:
    """``out`` with ``fn`` applied to its first tensor, the structure kept."""
    if isinstance(out, torch.Tensor):
        return fn(out)
    if hasattr(out, "to_tuple") and hasattr(out, "keys"):  # a ModelOutput
        key = next(iter(out.keys()))
        out[key] = fn(out[key])
        return out
    if isinstance(out, dict):
        key = next(iter(out))
        return {**out, key: fn(out[key])}
    if isinstance(out, tuple):
        return (on_first(out[0], fn), *out[1:])
    raise TypeError(f"cannot mutate an output of type {type(out).__name__}")


def reordered(out: Any) -> dict[str, Any]:
    items = list(out.items())
    if len(items) < 2:
        raise TypeError("reorder needs at least two named outputs")
    return dict(reversed(items))


def loop(axis: int) -> Callable[[torch.Tensor], torch.Tensor]:
    def step(y: torch.Tensor) -> torch.Tensor:
        if axis == 0:  # one step per sample, as per-sample post-processing does
            return torch.stack([y[i] * 1.0 for i in range(y.size(0))])
        parts = [y.select(axis, 0)]
        for t in range(1, y.size(axis)):
            parts.append(y.select(axis, t) + 0.5 * parts[-1])
        return torch.stack(parts, axis)

    return step


def baked(axis: int) -> Callable[[torch.Tensor], torch.Tensor]:
    def bake(y: torch.Tensor) -> torch.Tensor:
        shape = [1] * y.dim()
        shape[axis] = int(y.shape[axis])
        return y * torch.ones(shape, dtype=y.dtype)

    return bake


def noisy(y: torch.Tensor) -> torch.Tensor:
    return y + 0.01 * torch.randn_like(y)


def beyond_fp16(y: torch.Tensor) -> torch.Tensor:
    return y * 2e5 / 1e5  # fp16 holds neither: both become 65504, and the ratio 2 becomes 1


class Keeper(nn.Module):
    """What a stateful mutant keeps: a call count, a running mean (buffers) and a cached value (a
    plain attribute)."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("calls", torch.zeros(()))
        self.register_buffer("mean", torch.zeros(()))
        self.cached: torch.Tensor | None = None

    def counter(self, y: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return y * (1.0 + 0.1 * self.calls)

    def running(self, y: torch.Tensor) -> torch.Tensor:
        self.mean.lerp_(y.detach().float().mean(), 0.5)
        return y - self.mean

    def cache(self, y: torch.Tensor) -> torch.Tensor:
        if self.cached is None:
            self.cached = y.detach().float().mean() + 1.0
            return y
        return y - self.cached


def build(model: str, mutation: str) -> nn.Module:
    """The healthy ``model`` of the zoo with ``mutation`` applied (``loop_1``: along axis 1)."""
    inner = getattr(_zoo(), model)()
    kind, _, axis_text = mutation.partition("_")
    axis = int(axis_text or 0)
    if kind == "none":
        return wrap(inner)
    if kind == "inplace":
        return wrap(inner, edit_inputs=edit_in_place)
    if kind in ("counter", "running", "cache"):
        keeper = Keeper()
        return wrap(inner, edit_output=lambda out: on_first(out, getattr(keeper, kind)), keeper=keeper)
    edits: dict[str, Callable[[Any], Any]] = {
        "reorder": reordered,
        "loop": lambda out: on_first(out, loop(axis)),
        "baked": lambda out: on_first(out, baked(axis)),
        "random": lambda out: on_first(out, noisy),
        "fp16": lambda out: on_first(out, beyond_fp16),
    }
    if kind not in edits:
        raise ValueError(f"unknown mutation {mutation!r}; known: none, {', '.join(MUTATIONS)}")
    return wrap(inner, edit_output=edits[kind])


def __getattr__(name: str) -> Callable[[], nn.Module]:
    """``bert__loop_1`` → a factory of that mutant (the gate calls it with no arguments)."""
    model, sep, mutation = name.partition("__")
    if not sep:
        raise AttributeError(name)
    return lambda: build(model, mutation)
