"""Small models that keep state between calls: a forward that changes it where it reaches the outputs
(broken: the graph keeps the export-time state), one that changes it where it does not (healthy, a
warning), and noise drawn in eval. Factories return train mode, as real ones do."""

from __future__ import annotations

import torch
from torch import nn


def _seeded() -> None:
    torch.manual_seed(0)


class Tempered(nn.Module):
    """Counts its calls in a buffer and cools a softmax with the count (an annealed temperature)."""

    def __init__(self) -> None:
        super().__init__()
        _seeded()
        self.proj = nn.Linear(8, 5)
        self.register_buffer("calls", torch.zeros((), dtype=torch.long))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        temperature = 1.0 + 0.5 * self.calls.float()
        return torch.softmax(self.proj(x) / temperature, dim=-1)


class Normaliser(nn.Module):
    """A feature normaliser that keeps updating its running mean and variance in eval."""

    def __init__(self) -> None:
        super().__init__()
        _seeded()
        self.register_buffer("mean", torch.zeros(8))
        self.register_buffer("var", torch.ones(8))
        self.head = nn.Linear(8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.mean.lerp_(x.mean(0), 0.2)
        self.var.lerp_(x.var(0), 0.2)
        return self.head((x - self.mean) / self.var.sqrt())


class Prompted(nn.Module):
    """Keeps the context of its first call in a Python attribute of a submodule and reuses it."""

    def __init__(self) -> None:
        super().__init__()
        _seeded()
        self.encoder = nn.Linear(8, 8)
        self.encoder.context = None  # type: ignore[assignment]
        self.head = nn.Linear(8, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(self.encoder(x))
        if self.encoder.context is None:
            self.encoder.context = h.mean(0, keepdim=True).detach()  # type: ignore[assignment]
            return self.head(h)
        return self.head(h + self.encoder.context)


class Jittered(nn.Module):
    """Adds noise in eval too (augmentation left in forward)."""

    def __init__(self) -> None:
        super().__init__()
        _seeded()
        self.head = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(x + 0.05 * torch.rand_like(x))


class Audited(nn.Module):
    """Counts its calls and logs them in a list, neither of which reaches the outputs."""

    def __init__(self) -> None:
        super().__init__()
        _seeded()
        self.calls = 0
        self.log: list[int] = []
        self.body = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        self.log.append(self.calls)
        return self.body(x)


def tempered() -> nn.Module:
    return Tempered().train()


def normaliser() -> nn.Module:
    return Normaliser().train()


def prompted() -> nn.Module:
    return Prompted().train()


def jittered() -> nn.Module:
    return Jittered().train()


def audited() -> nn.Module:
    return Audited().train()
