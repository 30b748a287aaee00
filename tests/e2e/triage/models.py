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
