"""Write samples.npz: DigitNet's held-out digits (the ones train.py did not train on) with their labels.

    pip install scikit-learn && python examples/tinycnn/make_samples.py

The split is train.py's (a seeded permutation of scikit-learn's 1797 digits, the first 1500 to train),
so the 297 digits here were never seen in training. ``labels`` holds each digit's class: onnx-gate
reads it as the labels of the decision output (``logits``) and reports top-1 accuracy per precision.
"""

from __future__ import annotations

import numpy as np
from model import HERE

MEAN, STD = 4.88, 6.02  # of the digits pixels (0..16); also the preprocessing contract in onnx-gate.yml
TRAIN = 1500


def held_out() -> tuple[np.ndarray, np.ndarray]:
    """The digits train.py holds out, preprocessed as the model expects, and their classes."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = ((digits.images.astype(np.float32) - MEAN) / STD)[:, None]
    y = digits.target.astype(np.int64)
    test = np.random.default_rng(0).permutation(len(x))[TRAIN:]
    return x[test], y[test]


def main() -> None:
    image, labels = held_out()
    np.savez(HERE / "samples.npz", image=image, labels=labels)
    print(f"wrote {len(image)} held-out digits with labels to {HERE / 'samples.npz'}")


if __name__ == "__main__":
    main()
