"""``stateful`` and the snapshot every torch run starts from: a forward that keeps state between calls
fails where that state reaches its outputs, torch disagreeing with itself is named, and a state change
that never reaches the outputs is a warning."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from ci_onnx.contracts.bundle import TensorSpec, Tolerance
from ci_onnx.contracts.target import Status
from ci_onnx.export import reference, signature, state

X = {"x": np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)}
SPECS = (TensorSpec("x", ("batch", 4), "float32"),)


class Counter(nn.Module):
    """Counts its calls in a buffer and sharpens a softmax with the count."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 3)
        self.register_buffer("step", torch.zeros((), dtype=torch.long))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.step += 1
        return torch.softmax(self.lin(x) * self.step.float(), dim=-1)


class RunningMean(nn.Module):
    """Updates a running mean of its inputs in forward, in eval too, and centres by it."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("mean", torch.zeros(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.mean.mul_(0.9).add_(0.1 * x.mean(0))
        return x - self.mean


class Smoother(nn.Module):
    """Keeps its last output in a plain Python attribute of an inner module and blends it in."""

    def __init__(self) -> None:
        super().__init__()
        self.inner = nn.Linear(4, 4)
        self.inner.previous = None  # type: ignore[assignment]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.inner(x)
        if self.inner.previous is not None:
            y = y + 0.5 * self.inner.previous
        self.inner.previous = y.detach()  # type: ignore[assignment]
        return y


class Noisy(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + 0.1 * torch.randn_like(x)


class Tally(nn.Module):
    """Counts its calls in a plain int nothing reads: state that never reaches the outputs."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self.norm = nn.BatchNorm1d(4).eval()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return self.norm(x)


def _torch(model: nn.Module) -> reference.Torch:
    return reference.Torch(model.eval(), signature.bind(model.forward, ["x"]), SPECS, ["y"])


def _judge(model: nn.Module) -> Any:
    run = _torch(model)
    return state.stateful(model, run.snapshot, lambda: run.call(X).outputs, Tolerance(), {})


def test_state_that_reaches_the_outputs_fails_naming_it_and_the_call() -> None:
    for model, named in ((Counter(), "buffer 'step'"), (RunningMean(), "buffer 'mean'")):
        check = _judge(model)
        assert check.status is Status.FAILED, check.message
        assert named in check.message and "call 2" in check.message
        assert check.figures["diverges_at_call"] == 2


def test_a_python_attribute_cache_on_an_inner_module_is_named() -> None:
    check = _judge(Smoother())
    assert check.status is Status.FAILED
    assert "'inner.previous'" in check.message


def test_a_random_op_in_eval_is_torch_disagreeing_with_itself() -> None:
    check = _judge(Noisy())
    assert check.status is Status.FAILED
    assert "torch disagrees with itself" in check.message and check.figures["nondeterministic"]


def test_state_that_never_reaches_the_outputs_is_a_warning_and_a_clean_model_passes() -> None:
    tally = _judge(Tally())
    assert tally.status is Status.PASSED
    assert "attribute 'calls'" in tally.warnings[0]
    clean = _judge(nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4)))
    assert clean.status is Status.PASSED and not clean.warnings


def test_every_run_and_the_float64_check_start_from_the_snapshot() -> None:
    model = Counter()
    run = _torch(model)
    first = run(X)["y"]
    for _ in range(3):
        np.testing.assert_array_equal(run(X)["y"], first)
    what, double = run.self_check(X)
    assert what == "torch float32 against torch float64"
    np.testing.assert_allclose(double["y"], first, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(run.self_check(X)[1]["y"], first, rtol=1e-5, atol=1e-6)
    assert int(model.step) == 0  # left as the snapshot


def test_restore_removes_added_attributes_and_puts_back_replaced_tensors() -> None:
    model = RunningMean()
    snap = state.Snapshot.take(model)
    model.extra = [1, 2]  # type: ignore[assignment]
    model.mean = torch.ones(7)  # a buffer replaced with another shape
    assert set(snap.changes(model)) == {"buffer 'mean'", "attribute added 'extra'"}
    snap.restore(model)
    assert not hasattr(model, "extra") and model.mean.shape == (4,)
    assert snap.changes(model) == []
