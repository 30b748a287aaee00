"""Precisions without a runtime: their config, their error figures, the calibration set's checks."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from ci_onnx import config
from ci_onnx.contracts.errors import ConfigError
from ci_onnx.contracts.results import SQNR_CAP_DB
from ci_onnx.export import parent, precision
from ci_onnx.verify import compare
from tests.conftest import EXAMPLE_CONFIG

CONFIG = """\
version: 1
model:
  factory: {example}/model.py:build
  inputs: {{image: {{shape: [batch, 1, 8, 8]}}}}
  outputs: [logits]
  dynamic_axes: {{image: {{0: batch}}, logits: {{0: batch}}}}
  samples: {example}/samples.npz
export: {{opsets: [17], precisions: [{precisions}]{extra}}}
verify:
  precision_tolerance:
    int8-static: {{atol: 0.5, outputs: {{logits: {{rtol: 0.25}}}}}}
targets: {{runtimes: ["1.32.0"], providers: [cpu]}}
"""


def cfg_of(tmp_path: Path, precisions: str = "fp32, int8-static", extra: str = "") -> config.Config:
    path = tmp_path / "onnx-gate.yml"
    path.write_text(CONFIG.format(example=EXAMPLE_CONFIG.parent, precisions=precisions, extra=extra))
    return config.load(path)


def test_each_derived_precision_has_a_default_tolerance_overridable_per_output(tmp_path: Path) -> None:
    cfg = cfg_of(tmp_path)
    schema = config.schema()["properties"]["verify"]["properties"]["precision_tolerance"]["properties"]
    fp16, fp16_outputs = cfg.verify.precision_tolerance["fp16"]
    assert fp16.atol == schema["fp16"]["properties"]["atol"]["default"] and not fp16_outputs
    static, static_outputs = cfg.verify.precision_tolerance["int8-static"]
    assert static.atol == 0.5 and static.rtol == schema["int8-static"]["properties"]["rtol"]["default"]
    assert static_outputs["logits"].atol == 0.5 and static_outputs["logits"].rtol == 0.25
    assert cfg.verify.tolerance.atol < fp16.atol  # fp32 keeps its own, tighter one


def test_an_unknown_precision_is_one_line_naming_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        cfg_of(tmp_path, precisions="fp32, int4")
    message = str(err.value)
    assert "\n" not in message and "export.precisions" in message and "int4" in message


def test_a_precision_tolerance_for_an_unknown_output_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "onnx-gate.yml"
    text = CONFIG.format(example=EXAMPLE_CONFIG.parent, precisions="fp32, fp16", extra="")
    path.write_text(text.replace("{logits: {rtol: 0.25}}", "{logitz: {rtol: 0.25}}"))
    with pytest.raises(ConfigError) as err:
        config.load(path)
    message = str(err.value)
    assert "\n" not in message and "verify.precision_tolerance.int8-static.outputs.logitz" in message


def test_sqnr_and_cosine_follow_from_the_noise() -> None:
    rng = np.random.default_rng(0)
    ref = rng.normal(size=(4, 10)).astype(np.float32)
    noise = rng.normal(scale=0.01, size=ref.shape).astype(np.float32)
    got = ref + noise
    sqnr, cosine = compare.error_stats([(got, ref)])
    g, r = got.astype(np.float64), ref.astype(np.float64)
    expected = 10 * math.log10(float((r**2).sum()) / float(((g - r) ** 2).sum()))
    assert sqnr is not None and sqnr == pytest.approx(expected)
    assert cosine is not None and 0.999 < cosine < 1.0
    worse, _ = compare.error_stats([(ref + 10 * noise, ref)])
    assert worse is not None and worse == pytest.approx(sqnr - 20, abs=0.01)  # 10× the noise: −20 dB


def test_an_exact_match_is_capped_and_a_sign_flip_has_cosine_minus_one() -> None:
    ref = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    assert compare.error_stats([(ref.copy(), ref)]) == (SQNR_CAP_DB, 1.0)
    sqnr, cosine = compare.error_stats([(-ref, ref)])
    assert cosine == pytest.approx(-1.0) and sqnr is not None and sqnr < 0
    assert compare.error_stats([]) == (None, None)


def test_error_stats_pool_every_test_data_set() -> None:
    a, b = np.ones((2, 5), np.float32), np.full((3, 5), 2.0, np.float32)
    pooled, _ = compare.error_stats([(a + 0.1, a), (b, b)])
    alone, _ = compare.error_stats([(a + 0.1, a)])
    assert pooled is not None and alone is not None and pooled > alone  # more signal, the same noise


def test_a_sorted_or_constant_calibration_set_is_warned_and_a_shuffled_one_is_not(tmp_path: Path) -> None:
    real = np.load(EXAMPLE_CONFIG.parent / "samples.npz")["image"][:32]  # a small set, also warned
    means = real.reshape(len(real), -1).mean(axis=1)
    sets = {
        "sorted": real[np.argsort(means)],
        "constant": np.repeat(real[:1], len(real), axis=0),
        "shuffled": real[np.random.default_rng(1).permutation(len(real))],
        "grouped": np.repeat(real[:8], 4, axis=0)  # a few recordings, each in a row
        + np.random.default_rng(2).normal(scale=0.01, size=(32, 1, 8, 8)).astype(np.float32),
    }
    notes = {}
    for name, images in sets.items():
        np.savez(tmp_path / f"{name}.npz", image=images)
        cfg = cfg_of(tmp_path, extra=f", calibration: {tmp_path}/{name}.npz")
        notes[name] = precision.calibration(cfg, seed=0).warnings
    assert any("looks sorted" in n for n in notes["sorted"])
    assert any("looks sorted" in n for n in notes["grouped"])
    assert any("constant" in n for n in notes["constant"])
    assert not any("sorted" in n or "constant" in n for n in notes["shuffled"])
    assert all(any("few hundred" in n for n in ns) for ns in notes.values())  # 32 inputs: small


def test_calibration_is_shuffled_with_the_seed(tmp_path: Path) -> None:
    cfg = cfg_of(tmp_path)
    first = precision.calibration(cfg, seed=0).feeds["image"]
    real = np.load(EXAMPLE_CONFIG.parent / "samples.npz")["image"]
    assert not np.array_equal(first, real)
    assert np.array_equal(np.sort(first, axis=0), np.sort(real, axis=0))  # the same inputs, reordered
    assert np.array_equal(first, precision.calibration(cfg, seed=0).feeds["image"])


@pytest.mark.parametrize(
    ("arrays", "says"),
    [
        ({"img": np.zeros((8, 1, 8, 8), np.float32)}, "has no array 'image'"),
        ({"image": np.zeros((8, 3, 8, 8), np.float32)}, "has shape [8, 3, 8, 8]"),
    ],
)
def test_a_calibration_set_with_wrong_names_or_shapes_is_one_line_before_any_export(
    tmp_path: Path, arrays: dict[str, np.ndarray], says: str
) -> None:
    np.savez(tmp_path / "cal.npz", **arrays)
    cfg = cfg_of(tmp_path, extra=f", calibration: {tmp_path}/cal.npz")
    with pytest.raises(ConfigError) as err:
        parent.preflight(cfg)
    message = str(err.value)
    assert "\n" not in message and "export.calibration" in message and says in message


def test_a_derived_bundle_needs_its_fp32_export_selected() -> None:
    jobs = [parent.Job(17, "dynamo"), parent.Job(17, "torchscript")]
    chosen = parent.select(jobs, ["*-int8-static"], lambda _: ["op17-dynamo-int8-static"])
    assert chosen == [parent.Job(17, "dynamo")]


def test_fp16_keeps_a_graph_output_that_a_blocked_op_writes(tmp_path: Path) -> None:
    """MiniLM ends in a LayerNormalization (blocked): its fp32 → fp16 → fp32 Cast pair feeds the graph
    output, so dropping the pair would leave the output without a producer (an invalid model)."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    scale = numpy_helper.from_array(np.ones(8, np.float32), "scale")
    weight = numpy_helper.from_array(np.eye(8, dtype=np.float32), "weight")
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "weight"], ["h"]),
            helper.make_node("LayerNormalization", ["h", "scale"], ["y"], axis=-1),
        ],
        "tail",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])],
        [scale, weight],
    )
    source, target = tmp_path / "fp32.onnx", tmp_path / "fp16.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(source))
    precision.to_fp16(source, target, precision.FP16_BLOCKED)
    x = np.random.default_rng(0).standard_normal((2, 8)).astype(np.float32)
    (got,) = ort.InferenceSession(str(target), providers=["CPUExecutionProvider"]).run(["y"], {"x": x})
    want = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(got, want, atol=1e-2)
