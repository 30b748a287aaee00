"""Models whose shapes make or break serving: a fixed-shape row model, a Reshape that bakes the
sequence length, a position table sliced at the traced length, a healthy encoder over any length."""

from __future__ import annotations

import torch
from torch import nn


def _seeded() -> None:
    torch.manual_seed(0)


class Row(nn.Module):
    """A linear classifier of one row of 16 features (exported with the fixed shape [1, 16])."""

    def __init__(self) -> None:
        super().__init__()
        _seeded()
        self.fc = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)


class BakedReshape(nn.Module):
    """Splits the features into heads with the length read as a Python int: the trace keeps it as a
    constant of the Reshape, which then refuses every other length."""

    def __init__(self) -> None:
        super().__init__()
        _seeded()
        self.proj = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        length = int(x.shape[1])
        heads = self.proj(x).reshape(-1, length, 2, 4)
        return heads.softmax(-1).reshape(-1, length, 8)


class SlicedPositions(nn.Module):
    """Adds a position table sliced to the length as a Python int: traced at length 1, the graph
    adds the first position to every token at any other length (numbers, not an error)."""

    def __init__(self) -> None:
        super().__init__()
        _seeded()
        self.positions = nn.Parameter(torch.randn(64, 8))
        self.proj = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x + self.positions[: int(x.shape[1])])


class Encoder(nn.Module):
    """A small transformer encoder layer over any sequence length."""

    def __init__(self) -> None:
        super().__init__()
        _seeded()
        self.layer = nn.TransformerEncoderLayer(16, 2, 32, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer(x)


def row() -> nn.Module:
    return Row()


def baked_reshape() -> nn.Module:
    return BakedReshape()


def sliced_positions() -> nn.Module:
    return SlicedPositions()


def encoder() -> nn.Module:
    return Encoder()
