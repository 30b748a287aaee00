"""The minimal reproduction: the subgraph around the first diverging node (onnx's model extractor),
its real inputs and expected outputs as ``test_data_set_0`` (the ONNX test-data layout), and a plain
``reproduce.py`` that needs only numpy and the release it was found on. Small enough to attach to an
upstream issue; written under the run's output folder, never into a bundle."""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from ci_onnx.triage.graph import Graph

SCRIPT = "reproduce.py"
MODEL = "model.onnx"
DATA = "test_data_set_0"
MARK = "the divergence REPRODUCES"
"""What reproduce.py prints (and exit status 1) when the divergence reproduces."""


@dataclasses.dataclass(frozen=True)
class Settings:
    """How the reproduction's session is made: the target's provider and arithmetic."""

    providers: tuple[str, ...]
    level: str
    """An onnxruntime GraphOptimizationLevel name (ORT_ENABLE_ALL, ORT_DISABLE_ALL …)."""
    config: dict[str, str]
    options: dict[str, Any]
    release: str


def settings_of(
    preset: Mapping[str, Any], providers: Sequence[str], release: str, *, level: str = ""
) -> Settings:
    """The reproduction's session settings from the target's preset (ci_onnx.observer.session)."""
    from ci_onnx.observer import session

    opts: dict[str, Any] = {}
    if preset.get("intra_op_threads") is not None:
        opts["intra_op_num_threads"] = int(preset["intra_op_threads"])
    if preset.get("inter_op_threads") is not None:
        opts["inter_op_num_threads"] = int(preset["inter_op_threads"])
    if preset.get("mem_pattern") is not None:
        opts["enable_mem_pattern"] = bool(preset["mem_pattern"])
    config = dict(session.config_entries(preset))
    chosen = level or preset.get("graph_optimization_level") or "all"
    return Settings(tuple(providers), session.LEVELS[chosen], config, opts, release)


def write(
    model: Any,
    graph: Graph,
    inputs: Sequence[str],
    outputs: Sequence[str],
    values: Mapping[str, np.ndarray],
    expected: Mapping[str, np.ndarray],
    out_dir: Path,
    settings: Settings,
    *,
    atol: float,
    rtol: float,
    what: str,
    expected_from: str,
) -> int:
    """Extract ``inputs`` → ``outputs`` of ``model`` into ``out_dir`` with the test data and the
    script; returns the reproduction's size in bytes."""
    import onnx
    from onnx.utils import Extractor

    from ci_onnx.contracts import tensorproto

    if out_dir.exists():
        shutil.rmtree(out_dir)
    (out_dir / DATA).mkdir(parents=True)
    made_by = graph.producer()
    cut = [
        i for i in dict.fromkeys(inputs) if i and i not in graph.initializers and _not_constant(i, made_by)
    ]
    sub = Extractor(_typed(model, {**values, **expected}, [*cut, *outputs])).extract_model(cut, list(outputs))
    sub.graph.name = f"onnx-gate triage: {what}"[:200]
    onnx.save(sub, str(out_dir / MODEL))
    for n, name in enumerate(i.name for i in sub.graph.input):
        tensorproto.save(out_dir / DATA / f"input_{n}.pb", np.asarray(values[name]), name)
    for n, name in enumerate(o.name for o in sub.graph.output):
        tensorproto.save(out_dir / DATA / f"output_{n}.pb", np.asarray(expected[name]), name)
    template = resources.files("ci_onnx.triage").joinpath("reproduce.py.txt").read_text()
    # every name is data (a repr), never spliced into code: a node named with a backslash or a
    # quote still makes a script that runs
    script = template.format(
        what=what,
        release=settings.release,
        expected=expected_from,
        providers=list(settings.providers),
        level=settings.level,
        config=settings.config,
        options=settings.options,
        atol=atol,
        rtol=rtol,
    )
    (out_dir / SCRIPT).write_text(script)
    return sum(p.stat().st_size for p in out_dir.rglob("*") if p.is_file())


def _typed(model: Any, arrays: Mapping[str, np.ndarray], names: Sequence[str]) -> Any:
    """``model`` with the type and shape of each of ``names`` known (shape inference first, then the
    values themselves), as the extractor needs for the values it cuts at."""
    import onnx
    from onnx import helper

    typed = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    known = {v.name for v in [*typed.graph.value_info, *typed.graph.input, *typed.graph.output]}
    for name in names:
        if name not in known and name in arrays:
            arr = np.asarray(arrays[name])
            elem = helper.np_dtype_to_tensor_dtype(arr.dtype)
            typed.graph.value_info.append(helper.make_tensor_value_info(name, elem, list(arr.shape)))
    return typed


def _not_constant(value: str, made_by: Mapping[str, Any]) -> bool:
    n = made_by.get(value)
    return n is None or n.op_type != "Constant"
