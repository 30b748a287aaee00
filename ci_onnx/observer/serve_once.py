"""The fresh process of the cold-start figure: a serving process at its barest.

``python PATH/serve_once.py SPEC_JSON`` is started by ci_onnx.observer.coldstart as a script, not as a
module of the package, so that nothing but ``sys``, ``json`` and ``time`` is imported before its
clock starts: the figure is the interpreter, ``import numpy, onnxruntime``, the session's creation
and the first run, and not this harness. SPEC_JSON holds ``model``, ``providers`` (in order),
``feeds`` (an .npz of arrays i0, i1, …), ``names`` (the input names of i0, i1, …) and ``runs``; for a
kind that runs another engine, ``engine``: ``{"name": "openvino", "options": {…}}`` (compiled for the
CPU with those properties) or ``{"name": "tract", "facts": […]}`` (each input's fact), in place of
onnxruntime.

It prints two JSON lines: the first answer's figures (the observer stops its clock on that line),
then the warm runs of the same process.
"""

from __future__ import annotations

import json
import os  # already loaded by the interpreter's start-up: free
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:  # nothing imported at run time: the annotations stay strings
    from collections.abc import Callable
    from typing import Any

    Run = Callable[[dict[str, Any]], Any]
    Opens = Callable[[], Run]

HERE = os.path.dirname(os.path.abspath(__file__))
if sys.path and os.path.abspath(sys.path[0] or os.curdir) == HERE:
    del sys.path[0]  # run as a script, its folder leads sys.path: the package's modules shadow nothing


def _ms(seconds: float) -> float:
    return round(seconds * 1000.0, 4)


def _onnxruntime(spec: dict[str, Any]) -> Opens:
    import onnxruntime as ort

    def session() -> Run:
        so = ort.SessionOptions()
        so.log_severity_level = 3
        sess = ort.InferenceSession(spec["model"], so, providers=list(spec["providers"]))
        return lambda feeds: sess.run(None, feeds)

    return session


def _openvino(spec: dict[str, Any]) -> Opens:
    import openvino as ov

    def session() -> Run:
        core = ov.Core()
        compiled = core.compile_model(spec["model"], "CPU", dict(spec["engine"].get("options", {})))
        request = compiled.create_infer_request()
        run: Run = request.infer
        return run

    return session


def _tract(spec: dict[str, Any]) -> Opens:
    import tract

    def session() -> Run:
        model = tract.onnx().load(spec["model"])
        for i, fact in enumerate(spec["engine"]["facts"]):
            model.set_input_fact(i, fact)
        runnable = model.into_model().into_runnable()
        return lambda feeds: runnable.run([feeds[n] for n in spec["names"]])

    return session


def main(spec_json: str) -> int:
    spec = json.loads(spec_json)
    engine = {"openvino": _openvino, "tract": _tract}.get(spec.get("engine", {}).get("name"), _onnxruntime)
    t0 = time.perf_counter()
    import numpy as np

    session = engine(spec)
    t1 = time.perf_counter()
    run = session()
    t2 = time.perf_counter()
    with np.load(spec["feeds"], allow_pickle=True) as data:
        feeds = {name: data[f"i{k}"] for k, name in enumerate(spec["names"])}
    run(feeds)
    t3 = time.perf_counter()
    first = {"import_ms": _ms(t1 - t0), "session_ms": _ms(t2 - t1), "first_run_ms": _ms(t3 - t2)}
    print(json.dumps(first), flush=True)
    warm = []
    for _ in range(int(spec["runs"])):
        start = time.perf_counter()
        run(feeds)
        warm.append(_ms(time.perf_counter() - start))
    print(json.dumps({"warm_ms": warm}), flush=True)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: python serve_once.py SPEC_JSON", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
