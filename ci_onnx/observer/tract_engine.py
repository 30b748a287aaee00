"""The tract kind's observer: a bundle on tract (PyPI ``tract``, the Python bindings of sonos/tract).

``python -m ci_onnx.observer.tract_engine --bundle B --target-json '{…}' --ep NAME --out OBSDIR`` runs
with the environment's interpreter (tract + numpy). The model is loaded with ``tract.onnx()``, each
input's fact set from the bundle's shapes and types (a dynamic axis stays a symbol, so every served
batch size runs on one optimized model), then optimized and made runnable. A model tract refuses
(an op it lacks: ``Unimplemented(Det)``) is the load error, in tract's words without its backtrace.
tract tells nothing of where or in which precision a node ran: the placement is declared unmeasured,
with that reason.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path
from typing import Any

from ci_onnx.contracts.bundle import MODEL, Manifest
from ci_onnx.contracts.results import Observation
from ci_onnx.observer import engine
from ci_onnx.observer.engine import Opened, Port

RUNNER = "tract"
NO_PLACEMENT = "tract reports no placement: it runs every node on the CPU and says nothing per node"
DATUM = {
    "float32": "f32",
    "float16": "f16",
    "float64": "f64",
    "int64": "i64",
    "int32": "i32",
    "int16": "i16",
    "int8": "i8",
    "uint8": "u8",
    "uint16": "u16",
    "uint32": "u32",
    "uint64": "u64",
    "bool": "bool",
}
"""The bundle's element types → tract's datum types."""


def symbol(dim: Any) -> str:
    """A symbolic dim of the bundle as a tract symbol (letters, digits and underscores, not first a digit)."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", str(dim)) or "d"
    return name if not name[0].isdigit() else f"d{name}"


def fact(shape: list[Any] | tuple[Any, ...], dtype: str) -> str:
    """tract's fact for an input: ``batch,1,8,8,f32``; a type tract has no name for is an error."""
    datum = DATUM.get(dtype or "float32")
    if datum is None:
        raise engine.Refused(f"tract has no datum type for the bundle's input type {dtype!r}")
    dims = [str(d) if isinstance(d, int) and d >= 0 else symbol(d) for d in shape]
    return ",".join([*dims, datum])


class Session:
    def __init__(self, runnable: Any, inputs: list[Port], outputs: list[Port]) -> None:
        self._runnable = runnable
        self._inputs = inputs
        self._outputs = outputs

    def get_inputs(self) -> list[Port]:
        return self._inputs

    def get_outputs(self) -> list[Port]:
        return self._outputs

    def run_values(self, values: dict[str, Any]) -> dict[str, Any]:
        given = engine.arrays(values)
        got = self._runnable.run([given[p.name] for p in self._inputs])  # a fresh state each run
        return engine.tensors([o.name for o in self._outputs], [t.to_numpy() for t in got])


def opened(bundle: Path, manifest: Manifest) -> Opened:
    try:
        return _opened(bundle, manifest)
    except engine.Refused:
        raise
    except Exception as exc:  # tract's words, without the Rust backtrace it appends
        raise engine.Refused(str(exc).split("Stack backtrace:", 1)[0].strip()) from None


def _opened(bundle: Path, manifest: Manifest) -> Opened:
    import tract

    ctx = tract.onnx()  # 0.21 and before: model_for_path and into_optimized; 0.23: load, into_model
    load = getattr(ctx, "model_for_path", None) or ctx.load
    model = load(str(bundle / MODEL))
    names = [model.input_name(i) for i in range(model.input_count())]
    specs = {s.name: s for s in manifest.inputs}
    inputs, facts = [], []
    for i, name in enumerate(names):
        spec = specs.get(name)
        if spec is None:
            raise engine.Refused(f"the model's input {name!r} is not in the bundle's manifest")
        facts.append(fact(spec.shape, spec.dtype))
        model.set_input_fact(i, facts[-1])
        inputs.append(Port(name, tuple(d if isinstance(d, int) else str(d) for d in spec.shape)))
    if model.output_count() != len(manifest.outputs):
        raise engine.Refused(
            f"tract sees {model.output_count()} outputs, the bundle's manifest {len(manifest.outputs)}"
        )
    # tract names an output by the node that makes it; the file's order is the manifest's
    outputs = [Port(spec.name, ()) for spec in manifest.outputs]
    typed = model.into_optimized() if hasattr(model, "into_optimized") else model.into_model()
    runnable = typed.into_runnable()  # optimized for this CPU on the way (0.23's default runtime)
    fresh = {"name": RUNNER, "package": RUNNER, "facts": facts}
    return Opened(Session(runnable, inputs, outputs), annotate=_unplaced, cold_start=fresh)


def _unplaced(obs: Observation) -> Observation:
    return dataclasses.replace(obs, unmeasured={**obs.unmeasured, "placement": NO_PLACEMENT})


def main(argv: list[str] | None = None) -> int:
    args = engine.parser("python -m ci_onnx.observer.tract_engine", __doc__).parse_args(argv)
    from importlib import metadata

    env = engine.environment(metadata.version("tract"), "tract-python", ("cpu",))
    return engine.write(args, env, opened)


if __name__ == "__main__":
    sys.exit(main())
