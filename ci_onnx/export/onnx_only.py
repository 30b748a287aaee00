"""ONNX-only mode: a model exported elsewhere (``model.onnx`` + ``model.test_data``) becomes a bundle.

No torch: the test data directory, in the ONNX test-data layout, holds the inputs and the expected
outputs. The torch-side checks (``export``, ``control-flow``) are skipped with the reason.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from ci_onnx.config import Config
from ci_onnx.contracts import tensorproto
from ci_onnx.contracts.bundle import MODEL, Manifest, SweepSet, TensorSpec, TestDataSet
from ci_onnx.contracts.errors import ConfigError
from ci_onnx.contracts.results import CheckResult
from ci_onnx.contracts.target import Status
from ci_onnx.export import checks, inputs, writer
from ci_onnx.observer import values
from ci_onnx.verify import decode

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


def file_versions(cfg: Config) -> tuple[int, int]:
    """(default-domain opset, IR version) of model.onnx; use ci_onnx.plan.model_file, which calls this."""
    proto = _load(cfg, with_data=False)
    return checks.default_opset(proto), int(proto.ir_version)


def type_string(tp: Any) -> str:
    """A graph value's type in onnxruntime's notation; a tensor's element as its numpy name where
    numpy has one (``float32``), else onnxruntime's (``bfloat16``, ``float8e4m3fn``, ``int4``)."""
    from onnx import helper

    which = tp.WhichOneof("value")
    if which == "tensor_type":
        code = tp.tensor_type.elem_type
        if code in tensorproto.NATIVE:
            return tensorproto.NATIVE[code].name
        return tensorproto.NAMES.get(code) or helper.tensor_dtype_to_string(code)
    if which == "sequence_type":
        return f"seq({_nested(tp.sequence_type.elem_type)})"
    if which == "optional_type":
        return f"optional({_nested(tp.optional_type.elem_type)})"
    if which == "map_type":
        key = tensorproto.NAMES.get(tp.map_type.key_type, str(tp.map_type.key_type))
        return f"map({key},{_nested(tp.map_type.value_type)})"
    return which or "undefined"


def _nested(tp: Any) -> str:
    t = type_string(tp)
    return (
        f"tensor({tensorproto.NAMES.get(tp.tensor_type.elem_type, t)})" if values.kind(t) == "tensor" else t
    )


def _spec(vi: Any) -> TensorSpec:
    shape = tuple(checks.dims_of(vi)) if vi.type.WhichOneof("value") == "tensor_type" else ()
    return TensorSpec(vi.name, shape, type_string(vi.type))


def graph_inputs(proto: Any) -> tuple[TensorSpec, ...]:
    weights = {i.name for i in proto.graph.initializer}
    return tuple(_spec(vi) for vi in proto.graph.input if vi.name not in weights)


def graph_outputs(proto: Any) -> tuple[TensorSpec, ...]:
    return tuple(_spec(vi) for vi in proto.graph.output)


def read_sets(
    directory: Path, specs: tuple[TensorSpec, ...], outputs: tuple[TensorSpec, ...]
) -> list[tuple[Path, list[Path], list[Path]]]:
    """(test_data_set_N, its input files, its output files), each file checked to be the declared proto."""
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
        ins = [d / f"input_{i}.pb" for i in range(len(specs))]
        missing = [s.name for s, f in zip(specs, ins, strict=True) if not f.is_file()]
        if missing:
            raise ConfigError(
                f"model.test_data: {d.name} lacks input(s) {missing} (input_<i>.pb in graph input order)"
            )
        outs = [d / f"output_{i}.pb" for i in range(len(outputs)) if (d / f"output_{i}.pb").is_file()]
        for spec, f in (*zip(specs, ins, strict=True), *zip(outputs, outs, strict=False)):
            try:
                decode.load(f, spec.dtype)
            except decode.DecodeError:
                raise ConfigError(
                    f"model.test_data: {f} is not a {values.kind(spec.dtype)} proto, as {spec.name!r} "
                    f"({spec.dtype}) needs"
                ) from None
        out.append((d, ins, outs))
    return out


def _count(specs: tuple[TensorSpec, ...], inputs: list[Path]) -> int:
    """Samples in a test data set: the first input's axis 0 where it is a tensor with one, else 1."""
    for spec, f in zip(specs, inputs, strict=True):
        if values.kind(spec.dtype) == "tensor":
            arr = decode.load(f, spec.dtype)
            return int(arr.shape[0]) if arr.ndim else 1
    return 1


def make_bundle(cfg: Config, bundle_dir: Path) -> Manifest:
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
    findings: list[CheckResult] = [
        CheckResult("export", Status.SKIPPED, ONLY),
        CheckResult(
            "control-flow", Status.SKIPPED, f"{ONLY}; control flow can only be judged from the torch model"
        ),
        checks.checker(path),
        CheckResult(
            "opset", Status.PASSED, f"opset {opset} read from the file; the plan uses it", {"written": opset}
        ),
        checks.train_mode(proto),
        checks.dynamic_axes(proto, specs, m.dynamic_axes)
        if m.dynamic_axes
        else CheckResult(
            "dynamic-axes",
            Status.SKIPPED,
            "no model.dynamic_axes declared; the graph's symbolic dims are in the manifest",
        ),
        checks.outputs(proto, m.outputs)
        if m.outputs
        else CheckResult("outputs", Status.SKIPPED, "no model.outputs declared"),
        checks.graph(proto, files, None),
    ]
    written = []
    if m.test_data:
        for i, (_, ins, expected) in enumerate(read_sets(cfg.resolve(m.test_data), specs, outs)):
            # Copied byte for byte: every element type and value kind reaches the runner as written.
            directory = f"test_data_set_{i}"
            (bundle_dir / directory).mkdir()
            for f in (*ins, *expected):
                shutil.copyfile(f, bundle_dir / directory / f.name)
            written.append(TestDataSet(directory, "sample", _count(specs, ins)))
        reference = (
            f"{ONLY}; each target compares its runtime with the test data's outputs itself "
            "(verify.random_inputs applies only without model.test_data)"
        )
    else:
        from ci_onnx.export import onnx_reference

        feeds, refs, version = onnx_reference.random_set(cfg, path, specs)
        directory = writer.write_set(bundle_dir, 0, feeds, refs)
        written.append(TestDataSet(directory, "random", inputs.count_of(feeds, specs)))
        reference = (
            f"{ONLY}, and no model.test_data: the reference is onnxruntime {version}'s CPU run with every "
            f"graph optimization off, on {cfg.verify.random_inputs} seeded random inputs; it shows what "
            "a runtime, provider or optimization changes, not whether the file computes what the "
            "original model did (give test data for that)"
        )
    findings.append(CheckResult("reference-parity", Status.SKIPPED, reference))
    dynamic_axes = {
        s.name: {str(a): d for a, d in enumerate(s.shape) if isinstance(d, str)}
        for s in (*specs, *outs)
        if any(isinstance(d, str) for d in s.shape)
    }
    points = _sweep_sets(cfg, bundle_dir, specs, dynamic_axes, written)
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
        dynamic_axes=dynamic_axes,
        test_data_sets=written,
        node_count=len(proto.graph.node),
        op_histogram=checks.histogram(proto),
        package_versions=writer.versions("onnx", "onnxruntime"),
        sweep_sets=points,
    )


def _sweep_sets(
    cfg: Config,
    bundle_dir: Path,
    specs: tuple[TensorSpec, ...],
    dynamic_axes: dict[str, dict[str, str]],
    written: list[TestDataSet],
) -> tuple[SweepSet, ...]:
    """The sweep points of the graph's symbolic dims other than the batch axis, with onnxruntime's
    unoptimised CPU run as their reference (no torch here); a dim's export size is model.dim_sizes',
    else its size in the first test data set."""
    from ci_onnx.export import onnx_reference, sweep, sweep_sets

    if not set(sweep.symbols(dynamic_axes, specs)) - sweep.batch_symbols(specs, dynamic_axes):
        return ()
    drawable = onnx_reference.drawable_specs(cfg, specs)
    sizes = dict(cfg.model.dim_sizes)
    if written:
        first = {s.name: decode.load(bundle_dir / written[0].directory / f"input_{i}.pb", s.dtype)
                 for i, s in enumerate(specs) if values.kind(s.dtype) == "tensor"}  # fmt: skip
        for s in specs:
            for axis, d in enumerate(s.shape):
                if isinstance(d, str) and axis and s.name in first and axis < first[s.name].ndim:
                    sizes.setdefault(d, int(first[s.name].shape[axis]))
    return sweep_sets.write(
        bundle_dir,
        drawable,
        dynamic_axes,
        batch=inputs.EXAMPLE_BATCH,
        dim_sizes=sizes,
        seed=cfg.verify.seed,
        declared=cfg.verify.sweeps,
        maxima=cfg.model.dim_max,
        reference=onnx_reference.unoptimized(bundle_dir / MODEL),
        who="onnxruntime's unoptimised CPU run (the ONNX-only reference)",
        keep_refused=True,
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
