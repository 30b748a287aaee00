"""Fixed shapes and sweeps on real graphs: onnx.helper models, bundles with sweep sets whose references
say what the model means at every length, the python runner's own code (onnxruntime in this process)
and the judge."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from ci_onnx import matrix
from ci_onnx.contracts import bundle
from ci_onnx.contracts.bundle import TensorSpec
from ci_onnx.contracts.results import CheckResult, TargetResult
from ci_onnx.contracts.target import Status, Target
from ci_onnx.contracts.verify_options import VerifyOptions
from ci_onnx.export import sweep, sweep_sets
from ci_onnx.observer import feeds, ort
from ci_onnx.verify import evidence, judge
from tests import bundles

TARGET = Target("1.32.0", "cpu", 17, "onnx")
CPU = "CPUExecutionProvider"
SEQ_SPEC = bundles.BundleSpec(
    inputs=(TensorSpec("x", ("batch", "seq", 8), "float32"),),
    outputs=(TensorSpec("y", ("batch", "seq", 8), "float32"),),
    dynamic_axes={"x": {"0": "batch", "1": "seq"}, "y": {"0": "batch", "1": "seq"}},
    batch_sizes=(1, 4),
)


def _model(nodes: list[Any], inits: list[Any], x: list[Any], y: list[Any]) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, y)],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def heads(shape: list[int]) -> onnx.ModelProto:
    """y = softmax over groups of 4 features: Reshape to ``shape``, Softmax, Reshape back. With
    [0, 0, 2, 4] it copies the length; with [-1, 8, 2, 4] the length 8 is baked in, as a trace of
    ``reshape(-1, int(x.shape[1]), 2, 4)`` leaves it."""
    back = [0, 0, 8] if shape[1] == 0 else [-1, shape[1], 8]
    inits = [
        numpy_helper.from_array(np.array(shape, np.int64), "split"),
        numpy_helper.from_array(np.array(back, np.int64), "back"),
    ]
    nodes = [
        helper.make_node("Reshape", ["x", "split"], ["h"], name="split_heads"),
        helper.make_node("Softmax", ["h"], ["s"], axis=-1, name="softmax"),
        helper.make_node("Reshape", ["s", "back"], ["y"], name="merge_heads"),
    ]
    return _model(nodes, inits, ["batch", "seq", 8], ["batch", "seq", 8])


def softmax_heads(feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    x = feeds["x"]
    h = x.reshape(*x.shape[:2], 2, 4)
    e = np.exp(h - h.max(-1, keepdims=True))
    return {"y": (e / e.sum(-1, keepdims=True)).reshape(x.shape).astype(np.float32)}


POSITIONS = np.random.default_rng(3).standard_normal((64, 8)).astype(np.float32)


def first_position() -> onnx.ModelProto:
    """x + the position table sliced at the traced length 1: the first position added everywhere."""
    inits = [numpy_helper.from_array(POSITIONS[:1], "pos")]
    return _model(
        [helper.make_node("Add", ["x", "pos"], ["y"])], inits, ["batch", "seq", 8], ["batch", "seq", 8]
    )


def with_positions(feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    x = feeds["x"]
    return {"y": x + POSITIONS[: x.shape[1]]}


def seq_bundle(tmp: Path, model: onnx.ModelProto, meaning: Any, declared: Mapping[str, list[int]]) -> Path:
    """A bundle traced at seq = 8 whose sweep sets hold what the model means (``meaning``) at each point."""
    sets = [
        sweep.feeds_at(SEQ_SPEC.inputs, SEQ_SPEC.dynamic_axes, "seq", 8, 4, {"seq": 8}, seed=s) for s in (0,)
    ]
    path = bundles.write_bundle(tmp, model, SEQ_SPEC, sets, reference=lambda f: list(meaning(f).values()))
    points = sweep_sets.write(
        path,
        SEQ_SPEC.inputs,
        SEQ_SPEC.dynamic_axes,
        batch=2,
        dim_sizes={"seq": 8},
        seed=0,
        declared=declared,
        maxima={},
        reference=meaning,
        who="the meaning",
    )
    m = bundle.read_manifest(path, verify_hashes=False)
    bundle.write_manifest(path, dataclasses.replace(m, sweep_sets=points, files=bundle.hash_files(path)))
    return path


def verified(path: Path, tmp: Path, **options: Any) -> TargetResult:
    manifest = bundle.read_manifest(path)
    out = tmp / "obs"
    out.mkdir()
    obs = ort.observe(path, TARGET, ort.Options(ep=CPU, latency_runs=5), out)
    return judge.judge(
        TARGET, manifest, obs, evidence.load(manifest, obs, path, out), VerifyOptions(**options)
    )


def checks(result: TargetResult, prefix: str) -> dict[str, CheckResult]:
    return {c.name: c for c in result.checks if c.name.startswith(prefix)}


def test_the_default_points_are_the_probes_sizes_with_the_export_size_and_no_batch() -> None:
    points = sweep.timed_points(SEQ_SPEC.inputs, SEQ_SPEC.dynamic_axes, 2, {"seq": 8}, {}, {})
    assert [(p.symbol, p.size, p.declared) for p in points] == [
        ("seq", 1, False), ("seq", 5, False), ("seq", 8, False), ("seq", 16, False)
    ]  # fmt: skip
    assert sweep.sizes(8) == (1, 5, 8, 16)  # what the export's probes use (issue 25's sweep)
    capped = sweep.timed_points(SEQ_SPEC.inputs, SEQ_SPEC.dynamic_axes, 2, {"seq": 8}, {}, {"seq": 12})
    assert [p.size for p in capped] == [1, 5, 8, 12]  # the large point is the declared maximum
    declared = sweep.timed_points(SEQ_SPEC.inputs, SEQ_SPEC.dynamic_axes, 2, {"seq": 8}, {"seq": [64, 7]}, {})
    assert [(p.size, p.declared) for p in declared] == [(7, True), (64, True)]


def test_a_healthy_dynamic_length_graph_passes_at_every_point_and_each_is_timed(tmp_path: Path) -> None:
    path = seq_bundle(tmp_path / "b", heads([0, 0, 2, 4]), softmax_heads, {})
    result = verified(path, tmp_path)
    swept = checks(result, "sweep[")
    assert list(swept) == ["sweep[seq=1]", "sweep[seq=5]", "sweep[seq=8]", "sweep[seq=16]"]
    assert all(c.status is Status.PASSED for c in swept.values()), swept
    assert [s.point for s in result.observed.sweep_latency] == ["seq=1", "seq=5", "seq=8", "seq=16"]
    assert all(
        s.batch_size == 2 and s.runs == 5 and s.first_ms is not None for s in result.observed.sweep_latency
    )
    assert "items/s" in swept["sweep[seq=5]"].message


def test_a_reshape_that_bakes_the_length_fails_at_the_other_lengths_naming_them(tmp_path: Path) -> None:
    path = seq_bundle(tmp_path / "b", heads([-1, 8, 2, 4]), softmax_heads, {})
    swept = checks(verified(path, tmp_path), "sweep[")
    assert swept["sweep[seq=8]"].status is Status.PASSED  # the traced length
    for n in (1, 5):  # the Reshape refuses: the runtime's message names the node
        c = swept[f"sweep[seq={n}]"]
        assert c.status is Status.FAILED, c
        assert f"does not run at seq = {n} (exported at seq = 8)" in c.message
        assert "split_heads" in c.message and "reshape" in c.message.lower(), c.message
    # at 16 the element count happens to divide: it runs, and gives the wrong shape
    assert swept["sweep[seq=16]"].status is Status.FAILED
    assert "at seq = 16 (exported at seq = 8) the outputs differ" in swept["sweep[seq=16]"].message


def test_a_length_specialised_at_1_fails_everywhere_else_on_the_numbers(tmp_path: Path) -> None:
    path = seq_bundle(tmp_path / "b", first_position(), with_positions, {"seq": [1, 7, 64]})
    swept = checks(verified(path, tmp_path), "sweep[")
    assert swept["sweep[seq=1]"].status is Status.PASSED
    for n in (7, 64):
        assert swept[f"sweep[seq={n}]"].status is Status.FAILED
        assert f"at seq = {n} (exported at seq = 8) the outputs differ" in swept[f"sweep[seq={n}]"].message


def test_a_point_the_reference_cannot_compute_and_a_kind_that_cannot_run_points_say_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def short_table(f: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        if f["x"].shape[1] > 16:
            raise IndexError("index 40 is out of bounds for the position table of 16")
        return softmax_heads(f)

    path = seq_bundle(tmp_path / "b", heads([0, 0, 2, 4]), short_table, {"seq": [8, 40]})
    manifest = bundle.read_manifest(path)
    assert (
        manifest.sweep_sets[1].directory == ""
        and "the meaning fails at seq=40" in manifest.sweep_sets[1].error
    )
    result = verified(path, tmp_path)
    c = result.check("sweep[seq=40]")
    assert c is not None and c.status is Status.SKIPPED and "position table of 16" in c.message
    obs = ort.observe(path, TARGET, ort.Options(ep=CPU, latency_runs=2), tmp_path / "o2")
    native = dataclasses.replace(TARGET, runner="native")
    seen = evidence.load(manifest, obs, path, tmp_path / "o2")
    rows = dict(matrix.runners())  # the kind's declaration decides, not its name
    for can in (False, True):
        rows["native"] = dataclasses.replace(
            rows["native"], can=dataclasses.replace(rows["native"].can, sweep_points=can)
        )
        monkeypatch.setattr(matrix, "runners", lambda: rows)
        c = judge.judge(native, manifest, obs, seen, VerifyOptions()).check("sweep[seq=8]")
        assert c is not None and c.status is (Status.PASSED if can else Status.SKIPPED), c
        assert can or ("the native observer" in c.message and "can.sweep_points" in c.message)


def row_bundle(tmp: Path) -> Path:
    """A classifier of one row, exported with the fixed shape [1, 16]."""
    w = numpy_helper.from_array(np.random.default_rng(2).standard_normal((16, 10)).astype(np.float32), "w")
    model = _model([helper.make_node("MatMul", ["x", "w"], ["y"], name="fc")], [w], [1, 16], [1, 10])
    spec = bundles.BundleSpec(
        inputs=(TensorSpec("x", (1, 16), "float32"),),
        outputs=(TensorSpec("y", (1, 10), "float32"),),
        dynamic_axes={},
        batch_sizes=(1, 8),
    )
    sets = [{"x": np.random.default_rng(0).standard_normal((1, 16)).astype(np.float32)}]
    return bundles.write_bundle(tmp, model, spec, sets)


@pytest.mark.parametrize("declared", [(1, 8), ()])
def test_a_fixed_shape_model_is_checked_and_timed_at_its_own_size(
    tmp_path: Path, declared: tuple[int, ...]
) -> None:
    path = row_bundle(tmp_path / "b")
    manifest = bundle.read_manifest(path)
    assert feeds.fixed_size(manifest) == 1 and feeds.served(manifest) == [1]
    result = verified(path, tmp_path, declared_batch_sizes=declared)
    one, eight = result.check("batch[1]"), result.check("batch[8]")
    assert one is not None and one.status is Status.PASSED and "the model's fixed size" in one.message
    assert [s.batch_size for s in result.observed.latency] == [1]
    assert result.check("latency").status is Status.PASSED  # type: ignore[union-attr]
    assert result.check("memory").status is Status.PASSED  # type: ignore[union-attr]
    assert eight is not None
    if declared:  # written in the config: a claim the model cannot keep
        assert eight.status is Status.FAILED
        assert "fixed at 1 in the model, so it cannot serve batch 8" in eight.message
        assert "declare dynamic_axes for input 'x'" in eight.message
        assert result.status is Status.FAILED
    else:  # the default: skipped, saying why
        assert eight.status is Status.SKIPPED and "fixed at 1" in eight.message
        assert result.status is Status.PASSED


def test_the_fixed_size_run_is_compared_with_the_bundle_not_passed_for_running(tmp_path: Path) -> None:
    path = row_bundle(tmp_path / "b")
    manifest = bundle.read_manifest(path)
    out = tmp_path / "obs"
    out.mkdir()
    obs = ort.observe(path, TARGET, ort.Options(ep=CPU, latency_runs=2), out)
    wrong = out / "batch_1" / "output_0.pb"
    t = onnx.load_tensor(str(wrong))
    wrong.write_bytes(numpy_helper.from_array(numpy_helper.to_array(t) + 1, "y").SerializeToString())
    res = judge.judge(TARGET, manifest, obs, evidence.load(manifest, obs, path, out), VerifyOptions())
    c = res.check("batch[1]")
    assert c is not None and c.status is Status.FAILED and "differs from PyTorch" in c.message


def onnx_only_bundle(tmp: Path, model: onnx.ModelProto) -> Path:
    """``model`` as a model exported elsewhere (no torch): its sweep's reference is onnxruntime's
    unoptimised run of the graph itself."""
    from click.testing import CliRunner

    from ci_onnx.cli import cli

    tmp.mkdir(parents=True)
    onnx.save(model, tmp / "model.onnx")
    (tmp / "onnx-gate.yml").write_text(
        "version: 1\nmodel: {onnx: model.onnx, dim_sizes: {seq: 8}}\nverify: {random_inputs: 4}\n"
    )
    done = CliRunner().invoke(
        cli, ["export", "--config", str(tmp / "onnx-gate.yml"), "--out", str(tmp / "b")]
    )
    assert done.exit_code == 0, done.output
    return tmp / "b" / "op17-onnx"


def test_an_onnx_only_graph_that_refuses_its_own_symbolic_length_fails_there(tmp_path: Path) -> None:
    path = onnx_only_bundle(tmp_path / "baked", heads([-1, 8, 2, 4]))
    m = bundle.read_manifest(path)
    refused = [s.size for s in m.sweep_sets if s.error]
    assert refused == [1, 5] and all(s.directory for s in m.sweep_sets)  # the inputs, for each target
    swept = checks(verified(path, tmp_path / "baked"), "sweep[")
    assert swept["sweep[seq=8]"].status is Status.PASSED
    for n in (1, 5):
        c = swept[f"sweep[seq={n}]"]
        assert c.status is Status.FAILED and "split_heads" in c.message, c
        assert "the reference refuses it too" in c.message
    # at 16 the graph runs, and its own reference agrees with it: the declared shape does not
    c = swept["sweep[seq=16]"]
    assert c.status is Status.FAILED, c
    assert "output 'y' has shape [4, 8, 8], but its axis 0 is declared batch (= 2 here)" in c.message
    healthy = onnx_only_bundle(tmp_path / "healthy", heads([0, 0, 2, 4]))
    swept = checks(verified(healthy, tmp_path / "healthy"), "sweep[")
    assert len(swept) == 4 and all(c.status is Status.PASSED for c in swept.values()), swept


@pytest.mark.parametrize(
    ("first_ms", "runs", "expected"),
    [
        (0.05, 20, (3, 20)),  # a fast point: every run latency_runs asks for, after the warm-up
        (272.0, 20, (3, 7)),  # MiniLM at seq=512 on two cores: what fits two seconds
        (900.0, 20, (1, 2)),
        (45_000.0, 20, (0, 1)),  # a software GPU: one timed run, the first run its warm-up
        (0.0, 3, (2, 3)),
    ],
)
def test_a_sweep_point_is_timed_for_what_fits_its_budget(
    first_ms: float, runs: int, expected: tuple[int, int]
) -> None:
    from ci_onnx.observer import measure

    assert measure.sweep_runs(first_ms, runs) == expected
    calls: list[int] = []
    stat = measure.latency(1, lambda: calls.append(1), expected[1], first_ms=first_ms, warmups=expected[0])
    assert stat.runs == expected[1] and len(calls) == sum(expected)


def test_a_point_the_exports_probe_found_unfair_judges_no_target(tmp_path: Path) -> None:
    """Where the export's dynamic-axes probe saw the same values differ at the export size too (its
    figures.sweep says inconclusive), the timed point is listed with that reason and no reference:
    the target's sweep check is skipped saying so, never a failure on a probe that proves nothing
    about the dim (an attention mask that masks a whole row at seq = 1)."""
    axes = CheckResult(
        "dynamic-axes",
        Status.PASSED,
        "",
        {"sweep": {"seq": {"results": {"1": "inconclusive: y: 3 of 8 out of tolerance", "7": "agrees"}}}},
    )
    unfair = sweep_sets.inconclusive_points(axes)
    assert list(unfair) == [("seq", 1)] and "3 of 8 out of tolerance" in unfair[("seq", 1)]
    assert sweep_sets.inconclusive_points(None) == {}
    seen: list[int] = []

    def meaning(f: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        seen.append(f["x"].shape[1])
        return with_positions(f)

    points = sweep_sets.write(
        tmp_path, SEQ_SPEC.inputs, SEQ_SPEC.dynamic_axes, batch=2, dim_sizes={"seq": 8}, seed=0,
        declared={"seq": [1, 7]}, maxima={}, reference=meaning, who="the meaning", inconclusive=unfair,
    )  # fmt: skip
    assert [(p.size, bool(p.directory)) for p in points] == [(1, False), (7, True)] and seen == [7]
    assert points[0].error.startswith("not a fair probe at seq=1: the export's probe found")
