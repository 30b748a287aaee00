"""Faults triage was not built for: an op no module owns, and a module the export folded into
another. Each diverges at one known place, which the triage must name (tests/e2e/test_triage_heldout.py)."""

from __future__ import annotations

import torch
from torch import nn


class TimesThree(torch.autograd.Function):
    """``x * 3`` in PyTorch, whose TorchScript symbolic writes ``x * 2``: an export fault in an op that
    no module owns (it is applied in the parent's forward, between two Linears)."""

    @staticmethod
    def forward(ctx: object, x: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        return x * 3

    @staticmethod
    def symbolic(g: object, x: object) -> object:
        return g.op("Mul", x, g.op("Constant", value_t=torch.tensor(2.0)))  # type: ignore[attr-defined]


class Between(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(16, 16)
        self.b = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(TimesThree.apply(self.a(x)))


def custom_function() -> nn.Module:
    torch.manual_seed(0)
    return Between()


class Folded(nn.Module):
    """A Conv and its BatchNorm (non-trivial statistics), which the TorchScript export folds into one Conv."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
        bn = self.features[1]
        with torch.no_grad():
            bn.running_mean.uniform_(-1, 1)
            bn.running_var.uniform_(0.5, 2)
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.uniform_(-0.5, 0.5)
        self.head = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x).mean(dim=(2, 3)))


def folded_batchnorm() -> nn.Module:
    torch.manual_seed(0)
    return Folded()
