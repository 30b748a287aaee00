"""Planted faults for the triage's tests: each model diverges for one known reason at one known node.

Each factory returns a small real network (seeded weights); the test's onnx-gate.yml picks the
exporter, precision and session preset that makes its fault happen.
"""

from __future__ import annotations

import torch
from torch import nn


class Gain(nn.Module):
    def __init__(self, gain: float) -> None:
        super().__init__()
        self.register_buffer("gain", torch.tensor(gain, dtype=torch.float32))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.gain


class Denormal(nn.Module):
    """Activations scaled into the subnormal range and back: a runtime that flushes denormals to zero
    (session.set_denormal_as_zero) loses them at ``up``, the Mul that reads them."""

    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(16, 16)
        self.down = Gain(1e-39)
        self.up = Gain(1e38)
        self.head = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.up(self.down(torch.relu(self.inp(x)))))


def denormal() -> nn.Module:
    torch.manual_seed(0)
    return Denormal()


class SigmoidGelu(nn.Module):
    """GELU, which the factory's custom TorchScript symbolic exports wrongly (:func:`wrong_symbolic`)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.gelu(x)


class Mlp(nn.Module):
    def __init__(self, act: nn.Module) -> None:
        super().__init__()
        self.inp = nn.Linear(16, 32)
        self.act = act
        self.head = nn.Linear(32, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.act(self.inp(x)))


def _gelu_as_sigmoid(g: object, x: object, approximate: object = "none") -> object:
    """The symbolic a project might register for GELU: x·sigmoid(1.702·x), an approximation, not GELU."""
    scaled = g.op("Mul", x, g.op("Constant", value_t=torch.tensor(1.702)))  # type: ignore[attr-defined]
    return g.op("Mul", x, g.op("Sigmoid", scaled))  # type: ignore[attr-defined]


def wrong_symbolic() -> nn.Module:
    """An export fault: the TorchScript exporter takes the factory's own symbolic for aten::gelu."""
    torch.onnx.register_custom_op_symbolic("aten::gelu", _gelu_as_sigmoid, 17)
    torch.manual_seed(0)
    return Mlp(SigmoidGelu())


def outlier() -> nn.Module:
    """A precision fault: one weight of ``head`` is about 400 times the others, so its per-tensor int8
    weights (scale 40/127) round the weights of the other classes to 0 or ±0.31 and the decision among
    them is lost; ``inp`` quantizes fine."""
    torch.manual_seed(0)
    model = Mlp(nn.ReLU())
    with torch.no_grad():
        model.head.weight[0, 0] = -40.0
    return model


def mlp() -> nn.Module:
    """No fault: PyTorch and onnxruntime differ by rounding only (the tolerance case)."""
    torch.manual_seed(0)
    return Mlp(nn.Tanh())


class CeilPoolNet(nn.Module):
    """A CNN whose average pool has ceil_mode and count_include_pad: onnxruntime before 1.29 divides
    the partial windows ceil_mode adds by the full kernel size (the CPU kernel and its NCHWc form
    alike); onnx's reference and PyTorch divide by the window's own size."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 16, 3, padding=1)
        self.pool = nn.AvgPool2d(3, 2, ceil_mode=True, count_include_pad=True)
        self.head = nn.Linear(16 * 4 * 4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.flatten(self.pool(torch.relu(self.conv(x))), 1))


def ceil_pool() -> nn.Module:
    torch.manual_seed(0)
    return CeilPoolNet()
