"""Models whose batch is not (only) axis 0: tests/e2e/test_batch_axes.py.

Each is small and healthy unless its docstring says otherwise; none is a copy of a corpus model.
"""

from __future__ import annotations

import torch
from torch import nn


def _seeded() -> None:
    torch.manual_seed(0)


class TimeMajorLSTM(nn.Module):
    """A time-major LSTM with both initial states as inputs: ``x: [time, batch, 6]``, ``h0`` and
    ``c0: [1, batch, 10]``; its outputs carry the batch on axis 1 too."""

    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(6, 10)
        self.out = nn.Linear(10, 3)

    def forward(
        self, x: torch.Tensor, h0: torch.Tensor, c0: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        seq, (hn, _) = self.lstm(x, (h0, c0))
        return self.out(seq), hn


def time_major_lstm() -> nn.Module:
    _seeded()
    return TimeMajorLSTM()


class LeakyAcrossBatch(TimeMajorLSTM):
    """The same, with the outputs centred over the batch (axis 1): each row depends on the others,
    so one run of a batch differs from the rows run one at a time. A defect for a model served one
    request per row."""

    def forward(
        self, x: torch.Tensor, h0: torch.Tensor, c0: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        y, hn = super().forward(x, h0, c0)
        return y - y.mean(dim=1, keepdim=True), hn


def leaky_across_batch() -> nn.Module:
    _seeded()
    return LeakyAcrossBatch()


class Contrastive(nn.Module):
    """Query-key scores ``[batch, batch]`` (the batch on both axes, as in a contrastive loss's logits)
    and a per-row norm ``[batch]``."""

    def __init__(self) -> None:
        super().__init__()
        self.q = nn.Linear(5, 7)
        self.k = nn.Linear(5, 7)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        q, k = self.q(x), self.k(x)
        return q @ k.T / 7**0.5, q.norm(dim=-1)


def contrastive() -> nn.Module:
    _seeded()
    return Contrastive()
