"""The triage's memory and disk limits: which values it compares when every intermediate would not
fit, that it says so, and that a triage cut short still names the fault, on the nearest value kept."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnxruntime

from ci_onnx.contracts.target import Status, Target
from ci_onnx.contracts.triage_contract import FaultClass
from ci_onnx.contracts.verify_options import VerifyOptions
from ci_onnx.triage import bisect, bounds, classify, graph
from ci_onnx.verify import stage
from tests import chain

NODES, WIDTH = 16, 1 << 16  # 16 values of 256 KiB for one sample


def test_sizes_come_from_shape_inference_on_the_samples_own_shapes() -> None:
    m = chain.model(NODES, WIDTH)
    found = bounds.sizes(m, {"x": np.zeros((3, WIDTH), np.float32)})
    assert found["v0"] == found["y"] == 3 * WIDTH * 4
    assert len([v for v in found if v.startswith("v")]) == NODES - 1


def test_everything_is_compared_where_it_fits_and_a_spread_subset_where_it_does_not() -> None:
    m = chain.model(NODES, WIDTH)
    g = graph.of(m)
    size = bounds.sizes(m, {"x": np.zeros((1, WIDTH), np.float32)})
    total_mb = NODES * WIDTH * 4 / bounds.MB
    roomy = bounds.bound(g, size, 16 * total_mb, 16 * total_mb, runs=2, keep=["y"])
    assert roomy.exposed is None and roomy.reference and not roomy.note
    tight = bounds.bound(g, size, total_mb, 16 * total_mb, runs=2, keep=["y"])
    assert tight.exposed is not None and "y" in tight.exposed
    assert len(tight.exposed) == NODES // bounds.HELD, tight.exposed
    assert tight.exposed_mb <= total_mb / bounds.HELD
    assert "verify.triage_memory_mb" in tight.note and f"of {NODES} values" in tight.note
    kept = sorted(int(v[1:]) for v in tight.exposed if v != "y")
    assert kept[0] < NODES // 4 and kept[-1] > NODES // 2, f"spread over the graph: {kept}"
    disk = bounds.bound(g, size, 16 * total_mb, total_mb / 2, runs=2, keep=["y"])
    assert disk.exposed is not None and "verify.triage_disk_mb" in disk.note


def _triaged(tmp_path: Path, memory_mb: float) -> tuple[Status, object]:
    bundle = chain.bundle(tmp_path / "op17-onnx", NODES, WIDTH)
    target = Target(onnxruntime.__version__, "cpu", 17, "onnx", session_options="ftz")
    options = VerifyOptions(
        latency_runs=1, serving_figures=False, triage_timeout_s=120, triage_memory_mb=memory_mb
    )
    r = stage.verify(bundle, target, tmp_path / "out", options, python=sys.executable, base_env={}).result
    return r.status, r.triage


def test_a_triage_cut_short_by_memory_says_so_and_names_the_nearest_value_kept(tmp_path: Path) -> None:
    """1 MB is below what the triage's own process holds: only the failing output is compared, onnx's
    reference (every value at once) is left out, and the target stands in for it, saying so."""
    order = [n.name for n in graph.of(chain.model(NODES, WIDTH)).nodes]
    status, t = _triaged(tmp_path / "tight", memory_mb=1)
    assert status is Status.FAILED and t is not None and t.fault is None  # type: ignore[attr-defined]
    assert order.index(t.node) >= order.index("up"), t.node  # type: ignore[attr-defined]
    assert "cannot be told apart" in t.stopped  # type: ignore[attr-defined]
    notes = " ".join(t.notes)  # type: ignore[attr-defined]
    assert "verify.triage_memory_mb (1 MB) cut the search short: 1 of 16 values" in notes, notes
    assert "onnx's reference (which holds every value at once) did not run" in notes
    _, whole = _triaged(tmp_path / "roomy", memory_mb=1024)
    assert (whole.fault, whole.node) == ("runtime", "up"), whole  # type: ignore[attr-defined]
    assert not any("cut the search short" in n for n in whole.notes)  # type: ignore[attr-defined]


def test_a_runtime_fault_named_on_a_kept_value_is_narrowed_to_its_node_within_the_limit() -> None:
    g = graph.of(chain.model(NODES, WIDTH))
    values = [o for n in g.nodes for o in n.outputs]
    ref = {v: np.ones((1, 4), np.float32) for v in ["x", *values]}
    broken = set(values[values.index("v8") :])  # `up` makes v8: from there the target loses the values
    target = {v: np.zeros((1, 4), np.float32) if v in broken else ref[v] for v in ref}
    size = dict.fromkeys(values, 16)
    limit = bounds.Bound(frozenset({"v3", "v11", "y"}), True, "cut", room=32, size=size)
    kept = {v: target[v] for v in ["x", *limit.exposed]}
    s = classify.Sample(
        "y", 1e-4, 1e-3, g, ref["y"], target["y"], {k: ref[k] for k in kept}, kept, release="t"
    )
    first = classify.classify(s)
    assert (first.fault, first.node.name if first.node else "") == (FaultClass.RUNTIME, "n11")
    asked: list[frozenset[str]] = []

    def expose(which: frozenset[str]) -> dict[str, np.ndarray]:
        asked.append(which)
        return {v: target[v] for v in which}

    notes: list[str] = []
    found = bisect.narrowed(s, first, limit, ref, expose, notes)
    assert found.node is not None and found.node.name == "up", found.summary
    assert all(len(a) * 16 <= limit.room for a in asked) and len(asked) <= bisect.ROUNDS, asked
    assert notes and "named up" in notes[0]
