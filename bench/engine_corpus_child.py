"""Run ONNX backend node cases on one engine, in that engine's environment (the engine and numpy).

    python bench/engine_corpus_child.py {openvino|tract} CASES_FILE

CASES_FILE lists one case a line: its directory, a tab, its graph inputs' names (commas). For each
case the child prints ``START <name>``, then one JSON line: the case, ``status`` (pass, compare, load:
the engine refused to prepare the model, run: a run failed, skip) and the engine's or numpy's message.
A case is run as onnx's backend runner runs it: every test_data_set's inputs fed (their own shapes),
every output compared with ``np.testing.assert_allclose`` at the case's rtol/atol (data.json, else
onnx's 1e-3/1e-7). Only tensors of numpy's element types are read (ci_onnx.contracts.tensorproto): a case with
a sequence, map or optional, or a bfloat16, float8 or 4-bit tensor, is ``skip``.
bench/bench_engines.py starts it, and again after a crash.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from ci_onnx.contracts import tensorproto

RTOL, ATOL = 1e-3, 1e-7
TRACT_DATUM = {
    "float32": "f32", "float16": "f16", "float64": "f64", "int64": "i64", "int32": "i32", "int16": "i16",
    "int8": "i8", "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64", "bool": "bool",
}  # fmt: skip


def tolerances(case: Path) -> tuple[float, float]:
    data = case / "data.json"
    if data.is_file():
        d = json.loads(data.read_text())
        return float(d.get("rtol", RTOL)), float(d.get("atol", ATOL))
    return RTOL, ATOL


class Exotic(Exception):
    """An element type numpy has no dtype for (bfloat16, float8, int4 …): fed as its storage type
    it would test this harness, not the engine."""


def read_set(ds: Path, prefix: str) -> list[np.ndarray]:
    files = sorted(ds.glob(f"{prefix}_*.pb"), key=lambda p: int(p.stem.split("_")[1]))
    tensors = [tensorproto.load_tensor(f) for f in files]
    exotic = [
        tensorproto.NAMES.get(t.data_type, str(t.data_type))
        for t in tensors
        if t.data_type in tensorproto.BITS
    ]
    if exotic:
        raise Exotic(f"an element type numpy lacks: {exotic[0]}")
    return [t.array for t in tensors]


Run = Any
"""A prepared model: ``run(inputs) -> outputs``."""


def openvino_prepare() -> Any:
    """Read and compile for the CPU in f32; inputs fed by name, those the engine dropped (an input
    only its type is read from, CastLike's) left out, as the openvino observer feeds them."""
    import openvino as ov

    core = ov.Core()

    def prepare(model: Path, names: list[str], inputs: list[np.ndarray]) -> Run:
        del inputs
        compiled = core.compile_model(core.read_model(str(model)), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
        taken = {n for p in compiled.inputs for n in p.get_names()}

        def run(values: list[np.ndarray]) -> list[np.ndarray]:
            feed = {n: x for n, x in zip(names, values, strict=False) if n in taken}
            got = compiled.create_infer_request().infer(feed)
            return [np.asarray(got[p]) for p in compiled.outputs]

        return run

    return prepare


def tract_prepare() -> Any:
    """Load, set each input's fact from the first test data set's shapes and types, optimize."""
    import tract

    def prepare(model: Path, names: list[str], inputs: list[np.ndarray]) -> Run:
        del names
        m = tract.onnx().load(str(model))
        for i, x in enumerate(inputs):
            datum = TRACT_DATUM.get(x.dtype.name)
            if datum is None:
                raise TypeError(f"tract has no datum type for {x.dtype.name}")
            m.set_input_fact(i, ",".join([*(str(d) for d in x.shape), datum]))
        runnable = m.into_model().into_runnable()
        return lambda values: [t.to_numpy() for t in runnable.run(values)]

    return prepare


def one(case: Path, names: list[str], prepare: Any) -> dict[str, Any]:
    rtol, atol = tolerances(case)
    sets = sorted(case.glob("test_data_set_*"))
    try:
        data = [(read_set(ds, "input"), read_set(ds, "output")) for ds in sets]
    except Exotic as exc:
        return {"status": "skip", "why": str(exc)}
    except Exception as exc:  # a sequence, map or optional: not a tensor this child reads
        return {"status": "skip", "why": f"not tensors: {str(exc)[:200]}"}
    worst = 0.0
    try:
        run = prepare(case / "model.onnx", names, data[0][0] if data else [])
    except Exception as exc:
        return {"status": "load", "why": _words(exc)}
    for inputs, refs in data:
        try:
            got = run(inputs)
        except Exception as exc:
            return {"status": "run", "why": _words(exc)}
        try:
            np.testing.assert_equal(len(got), len(refs))
            for out, ref in zip(got, refs, strict=True):
                if ref.dtype == object or out.dtype == object:
                    np.testing.assert_array_equal(out, ref)
                    continue
                np.testing.assert_equal(out.shape, ref.shape)
                np.testing.assert_allclose(out, ref, rtol=rtol, atol=atol)
                if ref.size and np.issubdtype(ref.dtype, np.floating):
                    diff = np.abs(out.astype(np.float64) - ref.astype(np.float64))
                    worst = max(worst, float(np.nanmax(diff)) if np.isfinite(diff).any() else 0.0)
        except (AssertionError, TypeError, ValueError) as exc:
            return {"status": "compare", "why": " ".join(str(exc).split())[:300]}
    return {"status": "pass", "max_abs": worst}


def _words(exc: BaseException) -> str:
    return " ".join(str(exc).split("Stack backtrace:", 1)[0].split())[:300] or type(exc).__name__


def main() -> int:
    engine, cases_file = sys.argv[1], Path(sys.argv[2])
    prepare = openvino_prepare() if engine == "openvino" else tract_prepare()
    for line in cases_file.read_text().splitlines():
        where, _, names = line.partition("\t")
        case = Path(where)
        print(f"START {case.name}", flush=True)
        print(
            json.dumps({"case": case.name, **one(case, names.split(",") if names else [], prepare)}),
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
