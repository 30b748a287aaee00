"""The openvino kind's observer: a bundle on OpenVINO's own runtime, compiled for the CPU device.

``python -m ci_onnx.observer.openvino_engine --bundle B --target-json '{…}' --ep NAME --out OBSDIR
[--engine-options JSON]`` runs with the environment's interpreter (openvino + numpy). The model is read
by ``openvino.Core().read_model`` and compiled with the preset's properties (runners.toml
``[runners.openvino.presets]``; none: the engine's defaults). Besides what every engine's observer
records (ci_onnx.observer.engine), it records the values the compiled model took
(INFERENCE_PRECISION_HINT, PERFORMANCE_HINT, EXECUTION_MODE_HINT) and, from the compiled model's
runtime graph, the precision each node ran in (rt_info ``layerType``, ``runtimePrecision``,
``outputPrecisions``): the observation's ``engine_precision``, which the judge's
``engine-precision`` check reads.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import threading
from pathlib import Path
from typing import Any

from ci_onnx.contracts.bundle import MODEL, Manifest
from ci_onnx.contracts.results import EnginePrecision, Observation, PlacedNode, Placement
from ci_onnx.observer import engine
from ci_onnx.observer.engine import Opened, Port

RUNNER = "openvino"
DEVICE = "CPU"
EFFECTIVE = ("INFERENCE_PRECISION_HINT", "PERFORMANCE_HINT", "EXECUTION_MODE_HINT")
"""The compiled model's properties recorded as the engine took them."""
NOT_COMPUTE = {"Input", "Output", "Const", "Reorder", "Convert"}
"""Runtime-graph layers that carry or convert data rather than compute: not judged for precision."""
FLOATS = {"f64", "f32", "bf16", "f16", "f8e4m3", "f8e5m2"}
ASKED = {"fp32": "f32", "fp16": "f16"}
"""The precision a bundle's floating-point nodes are asked to run in, by the bundle's precision (an
int8 bundle's nodes legitimately run in integer and other precisions: not judged)."""


def text(value: Any) -> str:
    """An OpenVINO property or rt_info value as text (``bf16``, ``LATENCY``)."""
    for attr in ("astype", "get_type_name"):
        f = getattr(value, attr, None)
        if f is not None:
            try:
                return str(f(str) if attr == "astype" else f())
            except Exception:
                continue
    return str(getattr(value, "name", value))


class Session:
    """A compiled model, one infer request per thread (a request serves one run at a time)."""

    def __init__(self, compiled: Any, inputs: list[Port], outputs: list[Port]) -> None:
        self._compiled = compiled
        self._inputs = inputs
        self._outputs = outputs
        self._local = threading.local()

    def get_inputs(self) -> list[Port]:
        return self._inputs

    def get_outputs(self) -> list[Port]:
        return self._outputs

    def run_values(self, values: dict[str, Any]) -> dict[str, Any]:
        request = getattr(self._local, "request", None)
        if request is None:
            request = self._local.request = self._compiled.create_infer_request()
        got = request.infer(engine.arrays(values))
        ports = self._compiled.outputs
        return engine.tensors([o.name for o in self._outputs], [got[p] for p in ports])


def _port(p: Any) -> Port:
    dims = tuple(d.get_length() if d.is_static else "?" for d in p.get_partial_shape())
    return Port(p.get_any_name(), dims)


def open_model(options: dict[str, str]) -> Any:
    def opened(bundle: Path, manifest: Manifest) -> Opened:
        import openvino as ov

        core = ov.Core()
        model = core.read_model(str(bundle / MODEL))
        compiled = core.compile_model(model, DEVICE, options)
        names = [o.name for o in manifest.outputs]
        outputs = [
            Port(next((n for n in names if n in p.get_names()), p.get_any_name()), ())
            for p in compiled.outputs
        ]
        session = Session(compiled, [_port(p) for p in compiled.inputs], outputs)
        effective = {k: text(compiled.get_property(k)) for k in EFFECTIVE}
        nodes = runtime_nodes(compiled)
        asked = options.get("INFERENCE_PRECISION_HINT") or ASKED.get(manifest.precision, "")

        def annotate(obs: Observation) -> Observation:
            return annotated(obs, options, effective, nodes, asked)

        fresh = {"name": RUNNER, "package": RUNNER, "options": options}
        return Opened(session, annotate=annotate, cold_start=fresh)

    return opened


def runtime_nodes(compiled: Any) -> list[tuple[str, str, str, str]]:
    """(name, layer type, runtime precision, output precisions) of every node of the runtime graph."""
    out = []
    for op in compiled.get_runtime_model().get_ordered_ops():
        rt = op.get_rt_info()
        get = lambda key, rt=rt: text(rt[key]) if key in rt else ""  # noqa: E731
        out.append(
            (op.get_friendly_name(), get("layerType"), get("runtimePrecision"), get("outputPrecisions"))
        )
    return out


def other_precision(nodes: list[tuple[str, str, str, str]], asked: str) -> list[tuple[str, str, str]]:
    """The computing nodes that ran in another floating-point precision than ``asked``."""
    if not asked:
        return []
    return [
        (name, layer, precision)
        for name, layer, precision, _ in nodes
        if layer not in NOT_COMPUTE and precision in FLOATS and precision != asked
    ]


def annotated(
    obs: Observation,
    options: dict[str, str],
    effective: dict[str, str],
    nodes: list[tuple[str, str, str, str]],
    asked: str,
) -> Observation:
    """``obs`` with the placement (computing nodes per device and precision) and what the engine was
    set, took and ran in (``engine_precision``, the judge's engine-precision check)."""
    compute = [n for n in nodes if n[1] not in NOT_COMPUTE]
    by: dict[str, int] = {}
    for _, _, ran_in, _ in compute:
        key = f"{DEVICE} {ran_in or '?'}"
        by[key] = by.get(key, 0) + 1
    placement = Placement(
        source="runtime-model", nodes_by_provider=by, time_us_by_provider={}, fallback_nodes=()
    )
    others = tuple(PlacedNode(n, layer, f"{DEVICE} {p}") for n, layer, p in other_precision(nodes, asked))
    precision = EnginePrecision(asked, len(compute), others, dict(options), effective)
    return dataclasses.replace(obs, placement=placement, engine_precision=precision)


def main(argv: list[str] | None = None) -> int:
    p = engine.parser("python -m ci_onnx.observer.openvino_engine", __doc__)
    p.add_argument("--engine-options", default="{}", help="The preset's properties, as JSON.")
    args = p.parse_args(argv)
    options = {str(k): str(v) for k, v in json.loads(args.engine_options).items()}
    from importlib import metadata

    import openvino as ov

    env = engine.environment(metadata.version("openvino"), "openvino-python", ov.Core().available_devices)
    return engine.write(args, env, open_model(options))


if __name__ == "__main__":
    sys.exit(main())
