"""The tract runner kind without tract: its facts codec, its declarations, and the engine observer's
loop on a stand-in engine (onnxruntime behind the engine-session seam), judged by the one judge."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ci_onnx import matrix
from ci_onnx.contracts import serde
from ci_onnx.contracts.bundle import MODEL, Manifest, read_manifest
from ci_onnx.contracts.target import ENGINE_RUNNERS, Status, Target
from ci_onnx.contracts.verify_options import VerifyOptions
from ci_onnx.observer import engine, tract_engine
from ci_onnx.observer.engine import Opened, Port
from ci_onnx.runners import base, tract
from ci_onnx.verify import evidence, judge
from tests.bundles import mlp_bundle


def test_the_inputs_facts_come_from_the_bundles_shapes_and_types() -> None:
    assert tract_engine.fact(["batch", 1, 8, 8], "float32") == "batch,1,8,8,f32"
    assert tract_engine.fact(["seq len", 3], "int64") == "seq_len,3,i64"  # a symbol tract can read
    assert tract_engine.fact(["2x"], "") == "d2x,f32"  # not first a digit; no type: float32
    assert tract_engine.fact([], "bool") == "bool"  # 0-d
    with pytest.raises(engine.Refused, match="no datum type for the bundle's input type 'string'"):
        tract_engine.fact([1], "string")


def test_the_kind_declares_its_own_engine_releases_and_what_it_cannot_measure() -> None:
    info = matrix.runners()["tract"]
    assert (info.registry, info.package, info.providers, info.releases) == (
        "pypi",
        "tract",
        ("cpu",),
        ("latest",),
    )
    assert not info.can.interpreter and info.can.cold_start and info.can.sweep_points
    assert base.get("tract") is tract.RUNNER and tract.RUNNER.kind == "tract"
    assert set(ENGINE_RUNNERS) == {k for k, r in matrix.runners().items() if r.releases}
    # onnxruntime's table of what a release loads says nothing of tract 0.23.9 (it is not 1.15's row)
    assert info.caps_for("0.23.9") is None
    assert matrix.runners()["python"].caps_for("1.15.1") == matrix.caps_for("1.15.1")


def test_its_ids_name_the_engine_and_read_back() -> None:
    t = Target("0.23.9", "cpu", 17, "dynamo", runner="tract")
    assert (t.id, t.family, t.release_label) == (
        "tract0.23.9-cpu-op17-dynamo",
        "tract-cpu-op17-dynamo",
        "tract0.23.9",
    )
    assert Target.from_id(t.id) == t
    assert Target.from_id("digitnet.tract0.23.9-cpu-op18-dynamo").model == "digitnet"
    for wrong in ("tract-ort1.20.1-cpu-op17-dynamo", "node-tract0.23.9-cpu-op17-dynamo"):
        with pytest.raises(Exception, match="is not of the form"):
            Target.from_id(wrong)


class StandIn:
    """An engine session over onnxruntime: the seam every engine's observer fills."""

    def __init__(self, model: Path, refuse_at: int = 0) -> None:
        import onnxruntime as ort

        self._sess = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
        self._refuse_at = refuse_at
        self.inputs = [Port(i.name, tuple(i.shape)) for i in self._sess.get_inputs()]
        self.outputs = [Port(o.name, ()) for o in self._sess.get_outputs()]

    def get_inputs(self) -> list[Port]:
        return self.inputs

    def get_outputs(self) -> list[Port]:
        return self.outputs

    def run_values(self, values: dict[str, Any]) -> dict[str, Any]:
        given = engine.arrays(values)
        if self._refuse_at and next(iter(given.values())).shape[0] >= self._refuse_at:
            raise RuntimeError(f"Undetermined symbol in expression: batch >= {self._refuse_at}")
        got = self._sess.run(None, given)
        return engine.tensors([o.name for o in self.outputs], got)


def _observe(bundle: Path, tmp_path: Path, open_model: Any, *, cold_start: bool = False) -> tuple[Any, Any]:
    """The observation as the kind's collect completes it, and the verdict on it."""
    target = Target("0.23.9", "cpu", 17, "onnx", runner="tract")
    env = engine.environment("0.23.9", "tract-python", ("cpu",))
    out = tmp_path / "obs"
    out.mkdir()
    obs = engine.observe(
        bundle, target, out, env, open_model, ep="CPUExecutionProvider", latency_runs=3, cold_start=cold_start
    )
    (out / base.OBSERVATION).write_text(serde.dumps(obs))
    collected = tract.RUNNER.collect(out)
    manifest = read_manifest(bundle, verify_hashes=False)
    verdict = judge.judge(
        target, manifest, collected, evidence.load(manifest, collected, bundle, out), VerifyOptions()
    )
    return collected, verdict


FRESH = {"package": "onnxruntime"}
"""The stand-in's fresh process: serve_once with no engine name opens the model on onnxruntime."""


def _opened(refuse_at: int = 0) -> Any:
    def opened(bundle: Path, manifest: Manifest) -> Opened:
        session = StandIn(bundle / MODEL, refuse_at)
        return Opened(session, annotate=tract_engine._unplaced, cold_start=FRESH)

    return opened


def test_the_engine_observer_writes_the_python_kinds_observation(tmp_path: Path) -> None:
    obs, result = _observe(mlp_bundle(tmp_path / "b"), tmp_path, _opened(), cold_start=True)
    assert obs.load_error == "" and not obs.run_errors
    assert set(obs.outputs) == {"test_data_set_0", "test_data_set_1"}
    assert set(obs.batch_outputs) == {"1", "8"} and obs.batch_reference
    assert [s.batch_size for s in obs.latency] == [1, 8] and all(s.runs == 3 for s in obs.latency)
    assert obs.peak_rss_mb and obs.memory_threads == engine.MEMORY_THREADS
    assert obs.environment.providers_registered == ("CPUExecutionProvider",)
    assert obs.placement is None and obs.unmeasured["placement"] == tract_engine.NO_PLACEMENT
    s = obs.serving  # a fresh process, timed last, its runtime's size that of the engine's package
    assert s is not None and s.cold_start_ms and s.first_run_ms is not None and s.warm_runs > 0
    assert s.runtime_package == "onnxruntime" and s.runtime_bytes and "cold_start" not in obs.unmeasured
    assert result.check("cold-start").status is Status.PASSED


def test_a_cold_start_not_asked_for_is_said_so(tmp_path: Path) -> None:
    args = engine.parser("x", "").parse_args(
        ["--bundle", str(mlp_bundle(tmp_path / "b")), "--target-json", "{}", "--ep", "E", "--out", "o"]
    )
    assert args.no_cold_start is False
    target = Target("0.23.9", "cpu", 17, "onnx", runner="tract")
    x = base.Launch(tmp_path / "b", target, tmp_path / "o", VerifyOptions(serving_figures=False), "E")
    env = base.RunnerEnv("tract", "0.23.9", tmp_path, "/env/bin/python", "tract")
    assert tract.RUNNER.argv(env, x)[-1] == "--no-cold-start"  # verify.serving_figures: false


def test_the_judge_skips_the_fallback_check_with_the_engines_reason(tmp_path: Path) -> None:
    _, result = _observe(mlp_bundle(tmp_path / "b"), tmp_path, _opened())
    checks = {c.name: c for c in result.checks}
    assert result.status is Status.PASSED, result.summary
    assert (
        checks["fallback"].status is Status.SKIPPED
        and "tract reports no placement" in checks["fallback"].message
    )
    assert checks["parity[logits]"].status is Status.PASSED and checks["batch[8]"].status is Status.PASSED


def test_an_engine_that_refuses_the_model_fails_the_load_check_in_its_own_words(tmp_path: Path) -> None:
    def refuses(bundle: Path, manifest: Manifest) -> Opened:
        raise RuntimeError('Translating node #3 "n" Det ToTypedTranslator: Unimplemented(Det)')

    obs, result = _observe(mlp_bundle(tmp_path / "b"), tmp_path, refuses)
    assert obs.load_error.startswith("Translating node #3")
    assert result.status is Status.FAILED
    assert result.summary.startswith("load: Translating node #3") and "Unimplemented(Det)" in result.summary


def test_a_batch_size_the_engine_cannot_run_is_that_batch_checks_failure(tmp_path: Path) -> None:
    obs, result = _observe(mlp_bundle(tmp_path / "b"), tmp_path, _opened(refuse_at=8))
    assert "Undetermined symbol" in obs.batch_errors["8"]
    assert set(obs.batch_outputs) == {"1"} and [s.batch_size for s in obs.latency] == [1]
    batch8 = result.check("batch[8]")
    assert batch8 is not None and batch8.status is Status.FAILED and "Undetermined symbol" in batch8.message


def test_a_non_tensor_input_is_refused_by_name() -> None:
    with pytest.raises(engine.Refused, match="input 'x' is not a tensor"):
        engine.arrays({"x": [np.zeros(2)]})


def test_the_sweep_points_run_and_are_timed_on_the_engine(tmp_path: Path) -> None:
    from tests.unit.test_shape_sweeps import heads, seq_bundle, softmax_heads

    path = seq_bundle(tmp_path / "b", heads([0, 0, 2, 4]), softmax_heads, {})
    manifest = read_manifest(path, verify_hashes=False)
    assert [tract_engine.fact(s.shape, s.dtype) for s in manifest.inputs] == ["batch,seq,8,f32"]
    obs, result = _observe(path, tmp_path, _opened())
    swept = {c.name: c.status for c in result.checks if c.name.startswith("sweep[")}
    assert swept == dict.fromkeys(
        ["sweep[seq=1]", "sweep[seq=5]", "sweep[seq=8]", "sweep[seq=16]"], Status.PASSED
    )
    assert [s.point for s in obs.sweep_latency] == ["seq=1", "seq=5", "seq=8", "seq=16"]


ABORTED = """
thread '<unnamed>' (29353) panicked at core/src/ops/matmul/optimized.rs:134:17:
assertion failed: b_packing.dyn_eq(b.format()) ||
    (b_packing.is::<PackedFormat>() && b_packing.r() == b.format().r())
stack backtrace:
   0: __rustc::rust_begin_unwind
note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.

thread '<unnamed>' (29353) panicked at /rustc/b94/library/core/src/panicking.rs:225:5:
panic in a function that cannot unwind
stack backtrace:
   0:     0x7f813bd159f5 - <std::sys::backtrace::BacktraceLock>::print
thread caused non-unwinding panic. aborting.
"""
"""tract 0.23.9's stderr where it aborted on gpt2's dynamo export (tests/corpus/real_models.py)."""


def test_an_engine_that_panics_is_a_runner_error_in_the_panics_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ci_onnx.contracts import proc
    from ci_onnx.runners import engine as engine_kind

    assert engine_kind.panic(ABORTED) == (
        "panicked at core/src/ops/matmul/optimized.rs:134:17: assertion failed: b_packing.dyn_eq(b.format()) ||"
    )
    assert engine_kind.panic("Traceback (most recent call last):\nValueError: no\n") == ""

    def aborted(argv: list[str], **_: Any) -> proc.Completed:
        return proc.Completed(tuple(argv), -6, "", ABORTED, 1.0)

    monkeypatch.setattr(engine_kind.proc, "run", aborted)
    bundle = mlp_bundle(tmp_path / "b")
    target = Target.from_id("tract0.23.9-cpu-op18-torchscript")
    env = base.RunnerEnv("tract", "0.23.9", tmp_path, "python", "tract")
    launch = base.Launch(bundle, target, tmp_path / "obs", VerifyOptions(), "cpu")
    done = tract.RUNNER.launch(env, launch, base_env={})
    assert done.describe_failure() == (
        "killed by SIGABRT: panicked at core/src/ops/matmul/optimized.rs:134:17: "
        "assertion failed: b_packing.dyn_eq(b.format()) ||"
    )
    healthy = proc.Completed(("x",), 1, "", "Traceback\nValueError: no\n", 1.0)
    monkeypatch.setattr(engine_kind.proc, "run", lambda argv, **_: healthy)
    assert tract.RUNNER.launch(env, launch, base_env={}) is healthy  # no panic: as it came
