"""Train DigitNet on scikit-learn's digits and write weights.pt and samples.npz (held-out digits, labelled).

    pip install scikit-learn && python examples/tinycnn/train.py

Deterministic on the CPU for a given torch release; the committed weights came from torch 2.13.0.
"""

from __future__ import annotations

import numpy as np
import torch
from model import HERE, DigitNet
from sklearn.datasets import load_digits
from torch import nn

MEAN, STD = 4.88, 6.02  # of the digits pixels (0..16); also the preprocessing contract in onnx-gate.yml


def main() -> None:
    torch.manual_seed(0)
    digits = load_digits()
    x = ((digits.images.astype(np.float32) - MEAN) / STD)[:, None]
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(0).permutation(len(x))
    train, test = order[:1500], order[1500:]
    model = DigitNet()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    xt, yt = torch.from_numpy(x[train]), torch.from_numpy(y[train])
    for _epoch in range(30):
        model.train()
        for i in torch.randperm(len(xt)).split(64):
            opt.zero_grad()
            nn.functional.cross_entropy(model(xt[i]), yt[i]).backward()
            opt.step()
    model.eval()
    with torch.no_grad():
        accuracy = (model(torch.from_numpy(x[test])).argmax(1).numpy() == y[test]).mean()
    print(f"held-out accuracy: {accuracy:.3f} on {len(test)} digits")
    torch.save(model.state_dict(), HERE / "weights.pt")
    # the held-out digits and their classes, as make_samples.py writes them
    np.savez(HERE / "samples.npz", image=x[test], labels=y[test])


if __name__ == "__main__":
    main()
