"""The triage injection suite: faults planted at known nodes of a corpus model, and whether the triage
names the node (or the documented bracket) and the fault class.

PYTHONPATH=. python tests/injection/triage_suite.py [--table PATH]

prints one row per planted case and the share named right per fault kind. Each case is a real export
of DigitNet (tests/corpus/models/zoo.py ``tinycnn``, real trained weights) and is classified as the
triage does (ci_onnx.triage.classify) on what it compares: onnx's reference of the bundle's graph,
this interpreter's onnxruntime running the target's graph as it ran and with optimizations off
(every value exposed), and PyTorch's module outputs (forward hooks, ci_onnx.triage.torchref).

| kind | the fault | what must be named |
|---|---|---|
| symbolic-constant | a TorchScript symbolic for ``aten::relu`` written as Max(x, 0.05) | export, the Max of ``features.2`` (the first ReLU) |
| function-between | a custom ``autograd.Function`` (x·3 in PyTorch, x·2 in its symbolic) between ``features`` and ``head`` | export, the Mul no module owns, as a bracket |
| folded-bn-noise | BatchNorms folded into their Convs, noise added to the output in ``forward`` | export, a node after ``head`` (the noise), as a bracket; never a Conv |
| runtime-attribute | one Gemm's ``alpha`` (or ``beta``) changed in the graph the runtime runs only | runtime, that Gemm |
| tight-tolerance | an atol of 1e-9 on a healthy export | tolerance |
| int8-one-class | int8-static calibrated on the images of one digit, triaged on another digit | precision, the fp32 node whose activation the calibration clips most (the suite's own truth) |
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from ci_onnx.triage import classify, graph, reference, torchref

HERE = Path(__file__).resolve().parent
TABLE = HERE / "TRIAGE.md"
ZOO = HERE.parents[0] / "corpus" / "models" / "zoo.py"
ATOL, RTOL = 1e-4, 1e-3


class Wrapper(nn.Module):
    """The user's module under ``model``, as the export's flat wrapper holds it."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: Any) -> Any:
        return self.model(x)


def classified(
    model: nn.Module,
    x: torch.Tensor,
    work: Path,
    *,
    runtime_edit: Callable[[Any], None] | None = None,
    atol: float = ATOL,
    rtol: float = RTOL,
    exporter: str = "torchscript",
    translations: dict[Any, Any] | None = None,
) -> classify.Finding:
    """``model`` exported (input ``x``, output ``y``; dynamo with ``translations`` as its custom
    translation table, where given) and triaged on ``x``: onnx's reference, onnxruntime (on the graph
    ``runtime_edit`` changed, where given) and PyTorch (its modules, and the exported program's nodes
    for dynamo)."""
    import onnx
    import onnxruntime as ort

    model.eval()
    work.mkdir(parents=True, exist_ok=True)
    path = work / "model.onnx"
    if exporter == "dynamo":
        program = torch.onnx.export(
            Wrapper(model).eval(), (x,), dynamo=True, input_names=["x"], output_names=["y"],
            custom_translation_table=translations, verbose=False,
        )  # fmt: skip
        program.save(str(path))
    else:
        torch.onnx.export(
            Wrapper(model).eval(), (x,), str(path), dynamo=False, input_names=["x"], output_names=["y"],
            opset_version=17,
        )  # fmt: skip
    m = onnx.load(str(path))
    g = graph.of(m)
    feeds = {"x": x.numpy()}
    ran = onnx.ModelProto()
    ran.CopyFrom(m)
    if runtime_edit is not None:
        runtime_edit(ran)

    def session(proto: Any, level: Any) -> Any:
        so = ort.SessionOptions()
        so.graph_optimization_level = level
        return ort.InferenceSession(proto.SerializeToString(), so, providers=["CPUExecutionProvider"])

    as_run = session(ran, ort.GraphOptimizationLevel.ORT_ENABLE_ALL).run(["y"], feeds)[0]
    exposed = session(graph.expose(ran), ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    off = dict(zip([o.name for o in exposed.get_outputs()], exposed.run(None, feeds), strict=True))
    ref = reference.intermediates(m, feeds)
    with torch.no_grad():
        torch_out = model(x).numpy()
    modules = torchref.record(model, lambda leaves: model(leaves["x"]), feeds)
    if exporter == "dynamo":
        modules.update(torchref.program_values(Wrapper(model).eval(), [feeds["x"]], graph.fx_wanted(g)))
    labels: dict[str, str] = {}
    values = graph.module_values(g, modules, {k: tuple(v.shape) for k, v in ref.items()}, labels)
    sample = classify.Sample(
        "y", atol, rtol, g, torch_out, as_run, ref, off, values, release=ort.__version__,
        everywhere=(as_run, torch_out), torch_labels=labels,
    )  # fmt: skip
    return classify.classify(sample)


def digitnet() -> nn.Module:
    import importlib.util

    spec = importlib.util.spec_from_file_location("triage_injection_zoo", ZOO)
    assert spec and spec.loader
    zoo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(zoo)
    return zoo.tinycnn()  # type: ignore[no-any-return]


class Triple(torch.autograd.Function):
    """x·3 in PyTorch; its symbolic exports x·2."""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        return x * 3

    @staticmethod
    def symbolic(g: Any, x: Any) -> Any:
        return g.op("Mul", x, g.op("Constant", value_t=torch.tensor(2.0)))


class Between(nn.Module):
    """DigitNet with the custom Function between its ``features`` and its ``head``."""

    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.features, self.head = net.features, net.head

    def forward(self, x: Any) -> Any:
        return self.head(Triple.apply(self.features(x)))


class Noisy(nn.Module):
    """DigitNet with noise added to its output in ``forward``."""

    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.features, self.head = net.features, net.head

    def forward(self, x: Any) -> Any:
        y = self.head(self.features(x))
        return y + 0.5 * torch.randn_like(y)


def _relu_as_max(g: Any, x: Any) -> Any:
    """A symbolic with a wrong constant: max(x, 0.05) for relu."""
    return g.op("Max", x, g.op("Constant", value_t=torch.tensor(0.05)))


def _set_attribute(op_type: str, name: str, value: float) -> Callable[[Any], None]:
    def edit(m: Any) -> None:
        from onnx import helper

        node = next(n for n in m.graph.node if n.op_type == op_type)
        kept = [a for a in node.attribute if a.name != name]
        del node.attribute[:]
        node.attribute.extend([*kept, helper.make_attribute(name, value)])

    return edit


@dataclasses.dataclass(frozen=True)
class Case:
    kind: str
    name: str
    fault: str
    expect: Callable[[classify.Finding], bool]
    """Whether the finding names the planted node (or its documented bracket)."""
    expected: str
    """What ``expect`` asks, in words, for the table."""
    run: Callable[[Path], classify.Finding]


def _x(seed: int) -> torch.Tensor:
    return torch.randn(2, 1, 8, 8, generator=torch.Generator().manual_seed(seed))


def _symbolic(work: Path) -> classify.Finding:
    torch.onnx.register_custom_op_symbolic("aten::relu", _relu_as_max, 17)
    try:
        return classified(digitnet(), _x(0), work)
    finally:
        torch.onnx.unregister_custom_op_symbolic("aten::relu", 17)


SAMPLES = HERE.parents[1] / "examples" / "tinycnn" / "samples.npz"


class _Reader:
    def __init__(self, images: np.ndarray) -> None:
        self._rows = iter({"x": images[i : i + 1]} for i in range(len(images)))

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._rows, None)


def most_clipped(int8: Any, values: Mapping[str, np.ndarray]) -> str:
    """The suite's own truth for a calibration that missed: the fp32 value whose QuantizeLinear clips
    the sample's values most (beyond the calibrated range, relative to that range); a graph input,
    which no node of the graph can keep in fp32, is not one."""
    from onnx import numpy_helper

    inits = {i.name: numpy_helper.to_array(i) for i in int8.graph.initializer}
    inputs = {i.name for i in int8.graph.input}
    dequantized = {n.input[0]: n.output[0] for n in int8.graph.node if n.op_type == "DequantizeLinear"}
    worst, where = -1.0, ""
    for n in int8.graph.node:
        if n.op_type != "QuantizeLinear" or n.input[0] in inputs:
            continue
        # the fp32 graph's name: the value quantized, or the one its DequantizeLinear hands on
        name = n.input[0] if n.input[0] in values else dequantized.get(n.output[0], "")
        if name not in values:
            continue
        if n.input[1] not in inits:
            continue
        scale = float(np.max(inits[n.input[1]]))
        zero = float(np.max(inits[n.input[2]])) if len(n.input) > 2 and n.input[2] in inits else 0.0
        lo, hi = (-128 - zero) * scale, (127 - zero) * scale
        v = values[name]
        excess = max(0.0, float(v.max()) - hi, lo - float(v.min())) / (hi - lo)
        if excess > worst:
            worst, where = excess, name
    return where


def _one_class(work: Path) -> classify.Finding:
    """DigitNet's int8-static graph calibrated on the images of one digit only, triaged on the image
    of another digit it is worst on (against the fp32 graph, as the triage compares a precision)."""
    import onnx
    import onnxruntime as ort
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    data = np.load(SAMPLES)
    images, labels = data["image"], data["labels"]
    net = digitnet().eval()
    work.mkdir(parents=True, exist_ok=True)
    fp32, prepared, int8 = work / "fp32.onnx", work / "prepared.onnx", work / "int8.onnx"
    torch.onnx.export(
        Wrapper(net).eval(), (torch.from_numpy(images[:1]),), str(fp32), dynamo=False, input_names=["x"],
        output_names=["y"], opset_version=17, dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}},
    )  # fmt: skip
    quant_pre_process(str(fp32), str(prepared), skip_symbolic_shape=True)
    quantize_static(
        str(prepared), str(int8), _Reader(images[labels == 0]), quant_format=QuantFormat.QDQ,
        activation_type=QuantType.QInt8, weight_type=QuantType.QInt8, per_channel=True,
    )  # fmt: skip
    m32, m8 = onnx.load(str(fp32)), onnx.load(str(int8))
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    exposed = ort.InferenceSession(
        graph.expose(m8).SerializeToString(), so, providers=["CPUExecutionProvider"]
    )
    plain = ort.InferenceSession(str(fp32), providers=["CPUExecutionProvider"])
    others = images[labels != 0][:64]
    gap = np.abs(exposed.run(["y"], {"x": others})[0] - plain.run(["y"], {"x": others})[0]).max(axis=1)
    x = others[int(np.argmax(gap)) : int(np.argmax(gap)) + 1]
    off = dict(zip([o.name for o in exposed.get_outputs()], exposed.run(None, {"x": x}), strict=True))
    ref = reference.intermediates(m32, {"x": x})
    with torch.no_grad():
        torch_out = net(torch.from_numpy(x)).numpy()
    sample = classify.Sample(
        "y", ATOL, RTOL, graph.of(m8), torch_out, off["y"], ref, off, release=ort.__version__,
        precision="int8-static", fp32_graph=graph.of(m32), fp32_tolerance=(ATOL, RTOL),
    )  # fmt: skip
    found = classify.classify(sample)
    truth = graph.of(m32).producer().get(most_clipped(m8, ref))
    return dataclasses.replace(found, node=found.node if truth is not None and found.node == truth else None)


def _node(f: classify.Finding) -> tuple[str, str]:
    return (f.node.op_type, f.node.module) if f.node is not None else ("", "")


CASES = (
    Case("symbolic-constant", "relu as max(x, 0.05)", "export",
         lambda f: _node(f) == ("Max", "features.2") and "between" not in f.summary,
         "Max of features.2, its inputs matching", _symbolic),
    *(
        Case("function-between", f"x·3 exported as x·2, sample {seed}", "export",
             lambda f: _node(f) == ("Mul", "") and "between `features" in f.summary and "`head" in f.summary,
             "bracket between features and head: Mul",
             lambda work, seed=seed: classified(Between(digitnet()), _x(seed), work))
        for seed in (0, 1)
    ),
    *(
        Case("folded-bn-noise", f"noise after head, sample {seed}", "export",
             lambda f: f.node is not None and not f.node.module and f.node.op_type != "Conv"
             and "between `head" in f.summary,
             "bracket between head and the output (the noise), no Conv",
             lambda work, seed=seed: classified(Noisy(digitnet()), _x(seed), work))
        for seed in (0, 1)
    ),
    *(
        Case("runtime-attribute", f"Gemm {attr}=1.5 in the runtime's graph", "runtime",
             lambda f: _node(f) == ("Gemm", "head.2"), "Gemm of head.2",
             lambda work, attr=attr: classified(digitnet(), _x(0), work, runtime_edit=_set_attribute("Gemm", attr, 1.5)))
        for attr in ("alpha", "beta")
    ),
    Case("tight-tolerance", "atol 1e-9, rtol 0", "tolerance", lambda f: True, "the class",
         lambda work: classified(digitnet(), _x(0), work, atol=1e-9, rtol=0.0)),
    Case("int8-one-class", "int8-static calibrated on digit 0 only", "precision", lambda f: f.node is not None,
         "the fp32 node whose activation the calibration clips most", _one_class),
)  # fmt: skip


@dataclasses.dataclass(frozen=True)
class Row:
    case: Case
    fault: str
    node: str
    summary: str
    seconds: float

    @property
    def right(self) -> bool:
        return self.fault == self.case.fault and self.node != "-"


def run(cases: Sequence[Case], work: Path) -> list[Row]:
    rows = []
    for i, case in enumerate(cases):
        t0 = time.monotonic()
        f = case.run(work / str(i))
        node = f.node.name if f.node is not None and case.expect(f) else "-"
        rows.append(Row(case, f.fault.value if f.fault else "none", node, f.summary, time.monotonic() - t0))
    return rows


def shares(rows: Sequence[Row]) -> dict[str, tuple[int, int]]:
    """Per fault kind: cases named right (class and node), cases."""
    out: dict[str, tuple[int, int]] = {}
    for r in rows:
        right, total = out.get(r.case.kind, (0, 0))
        out[r.case.kind] = (right + r.right, total + 1)
    return out


def table(rows: Sequence[Row]) -> str:
    lines = [
        "# Triage injection suite",
        "",
        "Regenerated by `PYTHONPATH=. python tests/injection/triage_suite.py --table tests/injection/TRIAGE.md`",
        "(TorchScript exports of DigitNet, opset 17, this interpreter's onnxruntime; see the module's",
        "docstring). A case is named right when the class and the node (or bracket) expected are named.",
        "",
        "| kind | named right |",
        "|---|---|",
        *(f"| {k} | {r} of {n} |" for k, (r, n) in shares(rows).items()),
        "",
        "| kind | case | expected | class named | node named (when the one expected) | right |",
        "|---|---|---|---|---|---|",
        *(
            f"| {r.case.kind} | {r.case.name} | {r.case.fault}: {r.case.expected} | {r.fault} | "
            f"`{r.node}` | {'yes' if r.right else 'NO'} |"
            for r in rows
        ),
        "",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--table", type=Path, help="also write the table here (Markdown)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="triage-injection-") as tmp:
        rows = run(CASES, Path(tmp))
    for r in rows:
        print(f"{r.case.kind} / {r.case.name}: {r.fault} {r.node} ({r.seconds:.1f} s) {r.summary[:160]}",
              file=sys.stderr)  # fmt: skip
    text = table(rows)
    print(text)
    if args.table:
        args.table.write_text(text)
    return 0 if all(r.right for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
