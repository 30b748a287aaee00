"""Tokenize a few real sentences with the model's own tokenizer into samples.npz (padded to 16).

python examples/minilm/make_samples.py
"""

from __future__ import annotations

import numpy as np
from model import HERE, tokenize

SENTENCES = [
    "onnx-gate checks a model before it ships.",
    "A short one.",
    "The exported graph must agree with PyTorch on padded batches too.",
]

if __name__ == "__main__":
    np.savez(HERE / "samples.npz", **tokenize(SENTENCES, 16))  # type: ignore[arg-type]
