"""Exporter messages: colour codes gone, the operator named, data-dependent guards recognised."""

from __future__ import annotations

from ci_onnx.export import errors

# Shapes of messages torch 2.13 writes (measured), trimmed.
DYNAMO_UNSUPPORTED = (
    "<class 'torch.onnx._internal.exporter._errors.ConversionError'>: Failed to convert the exported "
    "program to an ONNX model. \x1b[96mThis is step 3/3\x1b[0m of exporting the model to ONNX.\n"
    "## Exception summary\n\n"
    "<class 'torch.onnx._internal.exporter._errors.DispatchError'>: No ONNX function found for "
    "<OpOverload(op='aten._linalg_eigh', overload='default')>. Failure message: No decompositions "
    "registered\n"
)
TS_UNSUPPORTED = (
    "<class 'torch.onnx.errors.UnsupportedOperatorError'>: Exporting the operator 'aten::linalg_eigh' "
    "to ONNX opset version 17 is not supported. Please feel free to request support"
)
GUARD = (
    "Failed to export the model with torch.export. \x1b[96mThis is step 1/3\x1b[0m\n## Exception summary\n\n"
    "<class 'torch.fx.experimental.symbolic_shapes.GuardOnDataDependentSymNode'>: Could not guard on "
    "data-dependent expression Eq(u0, 1) (unhinted: Eq(u0, 1)).\n\nThe following call raised this error:\n"
    '  File "/src/net.py", line 5, in forward\n    if x.abs().sum() > 0:\n\n'
)


def test_unsupported_operator_is_named_for_both_exporters() -> None:
    assert errors.unsupported_operator(DYNAMO_UNSUPPORTED) == "aten::linalg_eigh"
    assert errors.unsupported_operator(TS_UNSUPPORTED) == "aten::linalg_eigh"
    assert errors.unsupported_operator("RuntimeError: something else") == ""


def test_data_dependent_guard_is_recognised_and_summarised_with_the_users_line() -> None:
    assert errors.is_data_dependent(GUARD)
    assert not errors.is_data_dependent(TS_UNSUPPORTED)
    summary = errors.summarise(GUARD)
    assert "GuardOnDataDependentSymNode: Could not guard on data-dependent expression" in summary
    assert 'File "/src/net.py", line 5' in summary and "if x.abs().sum() > 0:" in summary
    assert "\x1b[" not in summary
    assert "Failed to export" not in summary  # the wrapper's step, not the reason


def test_summary_strips_colours_and_keeps_the_dispatch_error() -> None:
    summary = errors.summarise(DYNAMO_UNSUPPORTED)
    assert "\x1b[" not in summary
    assert summary.startswith("DispatchError: No ONNX function found")
    assert errors.strip_ansi("\x1b[1;31mred\x1b[0m") == "red"


TS_FAST_PATH = (
    "Torch IR graph at exception: graph(%0 : Float(*, *, 16)):\n"
    "  %38 : Float(2, 5, 16) = aten::_transformer_encoder_layer_fwd(%0, %39), scope: "
    "ci_onnx.export.torch_export.FlatCall::/net.Encoder::model/torch.nn.modules.transformer."
    "TransformerEncoderLayer::layer # /venv/torch/nn/modules/transformer.py:917:0\n"
    "  return (%38)\n\n"
    "<class 'torch.onnx.errors.UnsupportedOperatorError'>: Exporting the operator "
    "'aten::_transformer_encoder_layer_fwd' to ONNX opset version 17 is not supported."
)


def test_the_module_whose_call_became_the_unsupported_operator_is_named() -> None:
    op = errors.unsupported_operator(TS_FAST_PATH)
    assert op == "aten::_transformer_encoder_layer_fwd"
    assert errors.construct(TS_FAST_PATH, op) == (
        "module layer (torch.nn.modules.transformer.TransformerEncoderLayer, transformer.py:917)"
    )
    assert errors.construct(TS_UNSUPPORTED, "aten::linalg_eigh") == ""


def test_the_users_line_is_the_innermost_frame_outside_torch() -> None:
    from pathlib import Path

    torch_dir = Path("/venv/torch")
    python = 'File "/venv/torch/nn/module.py", line 9, in _call\nFile "/src/net.py", line 12, in forward\n'
    assert errors.user_line(python, torch_dir) == "net.py:12"
    traced = "/src/net.py(70): forward\n/venv/torch/nn/module.py(1768): _slow_forward\n/src/run.py(3): main\n"
    assert errors.user_line(traced, torch_dir) == "net.py:70"
    assert errors.user_line("/venv/torch/x.py(1): f\n", torch_dir) == ""
