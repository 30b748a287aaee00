"""Small models for the verdict-truth tests: each is either broken in a way that raises no hint, or
healthy in a way that used to look broken. Factories return train mode, as real ones do."""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import nn


def _seeded() -> None:
    torch.manual_seed(0)


class ScaleFirstChannels(nn.Module):
    """A preprocessing layer that scales the first channels of its input in place, through a view."""

    def __init__(self) -> None:
        super().__init__()
        _seeded()
        self.register_buffer("scale", torch.tensor([2.0, 0.5, 3.0]))
        self.head = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x.narrow(1, 0, 3).mul_(self.scale)
        return self.head(x)


class ZeroFirstColumn(nn.Module):
    """An in-place edit by index assignment (``x[:, 0] = 0``), which both exporters keep."""

    def __init__(self) -> None:
        super().__init__()
        _seeded()
        self.fc = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x[:, 0] = 0.0
        return self.fc(x)


class Detector(nn.Module):
    """Boxes and scores, returned as a dict in that order."""

    def __init__(self) -> None:
        super().__init__()
        _seeded()
        self.body = nn.Linear(6, 16)
        self.boxes = nn.Linear(16, 4)
        self.scores = nn.Linear(16, 1)

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        h = torch.relu(self.body(x))
        return {"boxes": self.boxes(h), "scores": self.scores(h).squeeze(-1).sigmoid()}


class Pair(NamedTuple):
    mean: torch.Tensor
    spread: torch.Tensor


class Gaussian(nn.Module):
    """A mean and a spread, returned as a namedtuple."""

    def __init__(self) -> None:
        super().__init__()
        _seeded()
        self.fc = nn.Linear(6, 6)

    def forward(self, x: torch.Tensor) -> Pair:
        h = self.fc(x)
        return Pair(h, nn.functional.softplus(h))


class PlainTuple(nn.Module):
    """The same two tensors as a plain tuple: only position says which is which."""

    def __init__(self) -> None:
        super().__init__()
        self.inner = Gaussian()

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mean, spread = self.inner(x)
        return mean, spread


class StepwiseSum(nn.Module):
    """A recurrence written as a Python loop over the sequence: unrolled at the traced length, with no
    TracerWarning (``x.size(1)`` is a Python int while tracing)."""

    def __init__(self) -> None:
        super().__init__()
        _seeded()
        self.cell = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.zeros_like(x[:, 0])
        for t in range(x.size(1)):
            h = torch.tanh(self.cell(x[:, t]) + h)
        return h


class SpatialNorm(nn.Module):
    """An instance norm written by hand with a tiny epsilon, and a gain read as a Python float (a
    TracerWarning that freezes nothing: the gain is a weight). On a constant input the variance is
    zero and float32 rounding is all that is left: torch disagrees with itself there."""

    def __init__(self) -> None:
        super().__init__()
        _seeded()
        self.conv = nn.Conv2d(2, 4, 3)
        self.gain = nn.Parameter(torch.tensor(1.5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.conv(x)
        mu = h.mean(dim=(2, 3), keepdim=True)
        var = ((h - mu) ** 2).mean(dim=(2, 3), keepdim=True)
        return (h - mu) / torch.sqrt(var + 1e-12) * float(self.gain)


class Selected(nn.Module):
    """Per-row features and the activations above a threshold: an output whose length depends on the
    values (masked_select), declared dynamic as ``n_selected``."""

    def __init__(self) -> None:
        super().__init__()
        _seeded()
        self.fc = nn.Linear(6, 6)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.fc(x)
        return h, torch.masked_select(h, h > 0.5)


class Encoder(nn.Module):
    """nn.TransformerEncoderLayer: under no_grad torch takes its fused fast path."""

    def __init__(self) -> None:
        super().__init__()
        _seeded()
        self.layer = nn.TransformerEncoderLayer(16, 2, 32, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer(x)


def scale_first_channels() -> nn.Module:
    return ScaleFirstChannels()


def zero_first_column() -> nn.Module:
    return ZeroFirstColumn()


def detector() -> nn.Module:
    return Detector()


def gaussian() -> nn.Module:
    return Gaussian()


def plain_tuple() -> nn.Module:
    return PlainTuple()


def stepwise_sum() -> nn.Module:
    return StepwiseSum()


def spatial_norm() -> nn.Module:
    return SpatialNorm()


def selected() -> nn.Module:
    return Selected()


def encoder() -> nn.Module:
    return Encoder()
