"""Triage compares at the graph's own granularity: a node is blamed only where the values feeding it
have PyTorch counterparts that match; an op no module owns (a custom Function's symbolic) is bracketed
by the nearest values that have one, and a BatchNorm folded into its Conv is compared as the fold.

Real TorchScript exports of small models, onnx's reference and PyTorch's own module outputs (forward
hooks, as ci_onnx.triage.torchref records them), classified as the triage does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ci_onnx.contracts.triage_contract import FaultClass
from ci_onnx.triage import classify, graph, torchref

torch = pytest.importorskip("torch")
nn = torch.nn

from tests.injection import triage_suite  # noqa: E402

Wrapper, Triple = triage_suite.Wrapper, triage_suite.Triple


def triage(tmp_path: Path, model: nn.Module, x: Any) -> classify.Finding:
    return triage_suite.classified(model, x, tmp_path)


class FunctionBetween(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(16, 16)
        self.b = nn.Linear(16, 4)

    def forward(self, x: Any) -> Any:
        return self.b(Triple.apply(self.a(x)))


def test_a_custom_functions_symbolic_between_two_linears_is_a_bracket_naming_the_mul(tmp_path: Path) -> None:
    torch.manual_seed(0)
    f = triage(tmp_path, FunctionBetween(), torch.randn(2, 16))
    assert f.fault is FaultClass.EXPORT and f.node is not None
    assert f.node.op_type == "Mul" and "/b/" not in f.node.name, f.summary
    assert "between `a` and `b`: Mul" in f.summary, f.summary
    assert f.repro_outputs and f.repro_inputs, "the reproduction cuts the bracket"


class FoldedNoisy(nn.Module):
    """Conv → BatchNorm (folded into the Conv by the export) → ReLU → Linear, then noise at the output."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU())
        self.head = nn.Linear(4 * 8 * 8, 4)
        with torch.no_grad():
            bn = self.features[1]
            bn.running_mean.uniform_(-1, 1)
            bn.running_var.uniform_(0.5, 2)
            bn.weight.uniform_(0.5, 2)

    def forward(self, x: Any) -> Any:
        y = self.head(torch.flatten(self.features(x), 1))
        return y + 0.1 * torch.randn_like(y)


def test_a_folded_batchnorm_is_compared_as_the_fold_and_the_noise_after_it_is_named(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = FoldedNoisy()
    exported = graph.of(_export_only(tmp_path, model))
    assert "BatchNormalization" not in {n.op_type for n in exported.nodes}, "the export folds it"
    f = triage(tmp_path, model, torch.randn(2, 1, 8, 8))
    assert f.node is not None, f.summary
    assert not f.node.module.startswith("features"), f.summary
    assert "features" not in f.summary, f.summary
    assert "between `head` and the output" in f.summary, f.summary


def test_a_fault_inside_one_module_whose_inputs_match_is_blamed_on_that_module(tmp_path: Path) -> None:
    class Halve(nn.Module):
        def forward(self, x: Any) -> Any:
            return Triple.apply(x)

    class Inside(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = nn.Linear(16, 16)
            self.act = Halve()
            self.b = nn.Linear(16, 4)

        def forward(self, x: Any) -> Any:
            return self.b(self.act(self.a(x)))

    torch.manual_seed(0)
    f = triage(tmp_path, Inside(), torch.randn(2, 16))
    assert f.fault is FaultClass.EXPORT and f.node is not None
    assert (f.node.op_type, f.node.module) == ("Mul", "act"), f.summary
    assert "between" not in f.summary and any("while its inputs match" in e for e in f.evidence), f.summary


def _export_only(tmp_path: Path, model: nn.Module) -> Any:
    import onnx

    model.eval()
    path = tmp_path / "plain.onnx"
    torch.onnx.export(
        Wrapper(model).eval(),
        (torch.randn(1, 1, 8, 8),),
        str(path),
        dynamo=False,
        input_names=["x"],
        opset_version=17,
    )
    return onnx.load(str(path))


def test_without_the_fold_the_conv_would_have_been_compared_with_pytorchs_conv_alone() -> None:
    """The mapping itself: the folded Conv's value is the BatchNorm's output, not the Conv module's."""
    nodes = (
        graph.Node("/model/features/features.0/Conv", "Conv", ("x", "w"), ("c",), module="features.0"),
        graph.Node("/model/features/features.2/Relu", "Relu", ("c",), ("r",), module="features.2"),
    )
    g = graph.Graph(nodes, ("x",), ("r",), frozenset({"w"}))
    conv, bn = np.zeros((1, 4)), np.ones((1, 4))
    shapes = {"c": (1, 4), "r": (1, 4)}
    labels: dict[str, str] = {}
    alone = graph.module_values(g, {"features.0": conv, "features.2": bn}, shapes, labels)
    assert labels["c"] == "features.0" and alone["c"] is conv
    labels.clear()
    folded = graph.module_values(
        g, {"features.0": conv, "features.1#input": conv, "features.1": bn, "features.2": bn}, shapes, labels
    )
    assert labels["c"] == "features.1" and folded["c"] is bn


def test_pytorchs_child_writes_each_modules_values_and_the_exported_programs_asked_for(
    tmp_path: Path,
) -> None:
    import json
    import subprocess
    import sys

    from ci_onnx.observer import triage as triage_observer

    models = Path(__file__).parents[1] / "e2e" / "triage" / "models.py"
    cfg = {
        "version": 1,
        "model": {
            "name": "mlp",
            "factory": f"{models}:mlp",
            "inputs": {"x": {"shape": ["batch", 16], "dtype": "float32"}},
            "outputs": ["y"],
        },
    }
    (tmp_path / "onnx-gate.yml").write_text(json.dumps(cfg))
    triage_observer.write_values(tmp_path / "in", {"x": np.ones((2, 16), np.float32)})
    argv = [sys.executable, "-m", "ci_onnx.triage.torchref", "--config", str(tmp_path / "onnx-gate.yml")]
    import importlib.util

    from ci_onnx.export import signature
    from ci_onnx.export.torch_export import flat_call

    spec = importlib.util.spec_from_file_location("triage_models", models)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    mlp = module.mlp().eval()
    flat = flat_call(mlp, signature.bind(mlp.forward, ["x"]), ["x"])
    program = torch.export.export(flat, (torch.ones(2, 16),), strict=False).module()
    tanh = next(n for n in program.graph.nodes if n.name == "tanh").format_node()
    other = "%linear : [num_users=1] = call_function[target=torch.ops.aten.relu.default](args = (%x,), kwargs = {})"
    (tmp_path / "fx.json").write_text(json.dumps({"tanh": tanh, "linear": other, "no_such_node": tanh}))
    done = subprocess.run(
        [*argv, "--inputs", str(tmp_path / "in"), "--out", str(tmp_path / "out"), "--fx", str(tmp_path / "fx.json")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    values = triage_observer.read_values(tmp_path / "out")
    outputs = [k for k in values if not k.endswith(torchref.INPUT)]
    assert outputs == ["inp", "act", "head", "fx:tanh"], "only the node that is the same node as recorded"
    assert np.array_equal(values["fx:tanh"], values["act"]) and np.array_equal(
        values["act#input"], values["inp"]
    )


class Scaled(nn.Module):
    """a → ReLU → × scale (in the parent's forward) → b: the Mul no module owns."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(16, 16)
        self.b = nn.Linear(16, 4)
        self.register_buffer("scale", torch.tensor(3.0))

    def forward(self, x: Any) -> Any:
        return self.b(torch.relu(self.a(x)) * self.scale)  # the line dynamo records for the Mul


def _wrong_mul(self: Any, other: Any) -> Any:
    """A custom translation of aten.mul.Tensor that multiplies by two thirds more."""
    from onnxscript import opset18 as op

    return op.Mul(op.Mul(self, other), op.CastLike(op.Constant(value_float=2.0 / 3.0), self))


def test_dynamo_maps_the_exported_programs_nodes_and_blames_the_mul_with_its_source_line(
    tmp_path: Path,
) -> None:
    torch.manual_seed(0)
    f = triage_suite.classified(
        Scaled(), torch.randn(2, 16), tmp_path, exporter="dynamo",
        translations={torch.ops.aten.mul.Tensor: _wrong_mul},
    )  # fmt: skip
    assert f.fault is FaultClass.EXPORT and f.node is not None, f.summary
    assert (f.node.op_type, f.node.fx) == ("Mul", "mul"), f.summary
    assert "between" not in f.summary and any("while its inputs match" in e for e in f.evidence), f.summary
    line = next(
        i for i, text in enumerate(Path(__file__).read_text().splitlines(), 1) if "the line dynamo" in text
    )
    assert f.node.source == f"{Path(__file__).name}:{line}" and f.node.source in f.summary, f.summary
