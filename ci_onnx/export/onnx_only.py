"""ONNX-only mode: a model exported elsewhere (``model.onnx`` + ``model.test_data``) becomes a bundle.

No torch: the test data directory, in the ONNX test-data layout, holds the inputs and the expected
outputs. The torch-side checks (``export``, ``control-flow``) are skipped with the reason.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from ci_onnx.bundle import MODEL, Finding, Manifest, TensorSpec, TestDataSet
from ci_onnx.config import Config
from ci_onnx.errors import ConfigError
from ci_onnx.export import checks, parity, writer
from ci_onnx.export.pipeline import graph_outputs
from ci_onnx.target import Status

ONLY = "ONNX-only mode: the model was exported elsewhere"


def _load(cfg: Config, *, with_data: bool) -> Any:
    import onnx

    path = cfg.resolve(cfg.model.onnx)
    if not path.is_file():
        raise ConfigError(f"model.onnx: {path} does not exist (paths are relative to the config)")
    try:
        return onnx.load(str(path), load_external_data=with_data)
    except Exception as exc:
        raise ConfigError(f"model.onnx: {path} is not a readable ONNX model ({exc})") from None


def file_opset(cfg: Config) -> int:
    return checks.default_opset(_load(cfg, with_data=False))


def graph_inputs(proto: Any) -> tuple[TensorSpec, ...]:
    from onnx import helper

    weights = {i.name for i in proto.graph.initializer}
    return tuple(
        TensorSpec(
            vi.name,
            tuple(checks.dims_of(vi)),
            helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type).name,
        )
        for vi in proto.graph.input
        if vi.name not in weights
    )


def read_sets(
    directory: Path, specs: tuple[TensorSpec, ...], outputs: tuple[TensorSpec, ...]
) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(inputs, expected outputs) of each test_data_set_N, named after the graph's inputs and outputs."""
    import onnx
    from onnx import numpy_helper

    if not directory.is_dir():
        raise ConfigError(f"model.test_data: {directory} is not a directory in the ONNX test-data layout")
    sets = sorted(
        directory.glob("test_data_set_*"),
        key=lambda p: int(p.name.rsplit("_", 1)[-1]) if p.name.rsplit("_", 1)[-1].isdigit() else 0,
    )
    if not sets:
        raise ConfigError(f"model.test_data: {directory} holds no test_data_set_N directory")
    out = []
    for d in sets:
        arrays: dict[str, dict[str, Any]] = {"input": {}, "output": {}}
        for kind, names in (("input", [s.name for s in specs]), ("output", [s.name for s in outputs])):
            files = sorted(d.glob(f"{kind}_*.pb"), key=lambda p: int(p.stem.split("_")[-1]))
            for i, f in enumerate(files):
                tensor = onnx.TensorProto()
                try:
                    tensor.ParseFromString(f.read_bytes())
                except Exception:
                    raise ConfigError(f"model.test_data: {f} is not a TensorProto") from None
                name = names[i] if i < len(names) else tensor.name
                arrays[kind][name] = numpy_helper.to_array(tensor)
        missing = [s.name for s in specs if s.name not in arrays["input"]]
        if missing:
            raise ConfigError(
                f"model.test_data: {d.name} lacks input(s) {missing} (input_<i>.pb in graph input order)"
            )
        out.append((arrays["input"], arrays["output"]))
    return out


def make_bundle(cfg: Config, bundle_dir: Path) -> Manifest:
    if not cfg.model.test_data:
        raise ConfigError(
            "model.test_data: ONNX-only mode needs a directory of test_data_set_N inputs and outputs"
        )
    raw = _load(cfg, with_data=False)
    proto = _load(cfg, with_data=True)
    source = cfg.resolve(cfg.model.onnx)
    writer.fresh_dir(bundle_dir)
    _copy_model(proto, source, bundle_dir, external=_uses_external(raw))
    specs = graph_inputs(proto)
    outs = graph_outputs(proto)
    path = bundle_dir / MODEL
    files = [p for p in bundle_dir.iterdir() if p.is_file()]
    opset = checks.default_opset(proto)
    m = cfg.model
    findings: list[Finding] = [
        Finding("export", Status.SKIPPED, ONLY),
        Finding(
            "control-flow", Status.SKIPPED, f"{ONLY}; control flow can only be judged from the torch model"
        ),
        checks.checker(path),
        Finding(
            "opset", Status.PASSED, f"opset {opset} read from the file; the plan uses it", {"written": opset}
        ),
        checks.train_mode(proto),
        checks.dynamic_axes(proto, specs, m.dynamic_axes)
        if m.dynamic_axes
        else Finding(
            "dynamic-axes",
            Status.SKIPPED,
            "no model.dynamic_axes declared; the graph's symbolic dims are in the manifest",
        ),
        checks.outputs(proto, m.outputs)
        if m.outputs
        else Finding("outputs", Status.SKIPPED, "no model.outputs declared"),
        checks.graph(proto, files, None),
    ]
    data = read_sets(cfg.resolve(m.test_data), specs, outs)
    written = []
    for i, (feeds, expected) in enumerate(data):
        directory = writer.write_set(bundle_dir, i, feeds, expected)
        first = next(iter(feeds.values()))
        written.append(
            (
                directory,
                feeds,
                expected,
                TestDataSet(directory, "sample", int(first.shape[0]) if first.ndim else 1),
            )
        )
    if any(expected for _, _, expected, _ in written):
        findings.append(
            parity.reference_parity(
                path,
                [(d, f, e) for d, f, e, _ in written],
                cfg.verify.tolerance,
                cfg.verify.tolerance_per_output,
                reference="the test data's outputs",
            )
        )
    else:
        findings.append(
            Finding(
                "reference-parity", Status.SKIPPED, "the test data holds no output_<i>.pb to compare with"
            )
        )
    return writer.write(
        bundle_dir,
        cfg,
        exporter="onnx",
        requested_opset=opset,
        findings=writer.complete(findings, ONLY),
        opset=opset,
        ir_version=int(proto.ir_version),
        inputs=specs,
        outputs=outs,
        dynamic_axes={
            s.name: {str(a): d for a, d in enumerate(s.shape) if isinstance(d, str)}
            for s in (*specs, *outs)
            if any(isinstance(d, str) for d in s.shape)
        },
        test_data_sets=[t for *_, t in written],
        node_count=len(proto.graph.node),
        op_histogram=checks.histogram(proto),
        package_versions=writer.versions("onnx", "onnxruntime"),
    )


def _uses_external(raw: Any) -> bool:
    import onnx

    return any(t.data_location == onnx.TensorProto.EXTERNAL for t in raw.graph.initializer)


def _copy_model(proto: Any, source: Path, bundle_dir: Path, *, external: bool) -> None:
    """As one file when the source is one, else as model.onnx + model.onnx.data."""
    import onnx

    if not external:
        shutil.copyfile(source, bundle_dir / MODEL)
        return
    onnx.save_model(
        proto,
        str(bundle_dir / MODEL),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location=f"{MODEL}.data",
    )
