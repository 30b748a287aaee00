"""Small models, each with one export pitfall planted, for the export stage's end-to-end tests.

Each factory returns the module in train mode, as real factories do; the gate calls ``.eval()``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class AlwaysBatchStats(nn.Module):
    """A norm layer that hard-codes ``training=True``: .eval() does not reach it (train-mode)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.bn = nn.BatchNorm2d(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        return F.batch_norm(y, self.bn.running_mean, self.bn.running_var, self.bn.weight, self.bn.bias, True)


class BranchOnValue(nn.Module):
    """A Python ``if`` on a tensor value (control-flow). Random inputs always take the traced branch."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.abs().sum() > 0:
            return self.fc(x)
        return -self.fc(x)


class Small(nn.Module):
    """Nothing wrong with it: the pitfall is in its config (dynamic axes omitted)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)


class GlobalAveragePool(nn.Module):
    """A CNN that ends in a mean over H and W (ReduceMean): dynamo cannot take it down to opset 17."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x).mean(dim=(2, 3))


class Eigenvalues(nn.Module):
    """torch.linalg.eigh, which neither exporter can translate (export)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        return torch.linalg.eigh(y @ y.transpose(-1, -2))[0]


def train_mode() -> nn.Module:
    return AlwaysBatchStats()


def control_flow() -> nn.Module:
    return BranchOnValue()


def small() -> nn.Module:
    return Small()


def pooled() -> nn.Module:
    return GlobalAveragePool()


def eigh() -> nn.Module:
    return Eigenvalues()


def raises() -> nn.Module:
    raise RuntimeError("weights.pt not found")
