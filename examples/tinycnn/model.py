"""DigitNet: a small CNN that classifies 8x8 handwritten digits (scikit-learn's digits data set).

Conv / batch-norm / dropout layers and a linear classifier head, with real trained weights
(``weights.pt``, made by ``train.py``). The factory returns the model as training left it, in train
mode, as real factories often do: the gate calls ``.eval()`` itself.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

HERE = Path(__file__).parent


class DigitNet(nn.Module):
    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.Conv2d(16, 32, 3, padding=1),
            nn.BatchNorm2d(32),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Dropout(0.25),
            nn.Conv2d(32, 32, 3, padding=1),
            nn.BatchNorm2d(32),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.head = nn.Sequential(nn.Flatten(), nn.Dropout(0.5), nn.Linear(32 * 2 * 2, classes))

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(image))


def build() -> nn.Module:
    model = DigitNet()
    model.load_state_dict(torch.load(HERE / "weights.pt", map_location="cpu", weights_only=True))
    return model
