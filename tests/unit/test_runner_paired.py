"""The Python runner times the base commit's bundle beside the head's, interleaved, and records every
timed run (onnxruntime in this process: the observer's own code path, without a child)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from ci_onnx.contracts import bundle
from ci_onnx.contracts.target import Target
from ci_onnx.contracts.verify_options import VerifyOptions
from ci_onnx.observer import measure, ort
from ci_onnx.runners.base import Launch
from ci_onnx.runners.python import observer_args
from tests import bundles

TARGET = Target("1.32.0", "cpu", 17, "dynamo")
CPU = "CPUExecutionProvider"


def test_every_timed_run_is_recorded_with_its_percentiles() -> None:
    calls = iter(range(1, 100))
    s = measure.latency(8, lambda: next(calls), 12)
    assert s.runs == 12 and len(s.samples_ms) == 12 and all(t >= 0 for t in s.samples_ms)
    assert s.p50_ms <= s.p90_ms <= s.p99_ms <= max(s.samples_ms) + 1e-3


def test_interleaved_timing_alternates_which_side_runs_first() -> None:
    order: list[str] = []
    head, base = measure.interleaved(1, lambda: order.append("h"), lambda: order.append("b"), 4)
    timed = order[2 * measure.PAIRED_WARMUP :]
    assert timed == ["h", "b", "b", "h", "h", "b", "b", "h"]
    assert head.runs == base.runs == 4 and len(head.samples_ms) == len(base.samples_ms) == 4


def test_the_observer_times_the_base_bundle_beside_its_own(tmp_path: Path) -> None:
    head = bundles.mlp_bundle(tmp_path / "head")
    base = bundles.mlp_bundle(tmp_path / "base")
    options = ort.Options(ep=CPU, latency_runs=10, paired_bundle=str(base))
    (tmp_path / "obs").mkdir()
    obs = ort.observe(head, TARGET, options, tmp_path / "obs")
    assert obs.paired is not None and obs.paired_error == ""
    assert obs.paired.base_bundle == bundle.read_manifest(base).files[bundle.MODEL]
    assert [s.batch_size for s in obs.paired.head] == [s.batch_size for s in obs.paired.base] == [1, 8]
    assert all(len(s.samples_ms) == measure.PAIRED_RUNS for s in (*obs.paired.head, *obs.paired.base))
    assert all(len(s.samples_ms) == 10 for s in obs.latency)  # the head's own figures are unchanged


def test_a_base_bundle_that_cannot_run_the_heads_inputs_is_said_not_hidden(tmp_path: Path) -> None:
    head = bundles.mlp_bundle(tmp_path / "head")
    base = bundles.write_bundle(
        tmp_path / "base",
        bundles.partly_cpu(),
        bundles.PARTLY_CPU_SPEC,
        bundles.random_sets(bundles.PARTLY_CPU_SPEC.inputs, 4),
    )
    (tmp_path / "obs").mkdir()
    obs = ort.observe(
        head, TARGET, ort.Options(ep=CPU, latency_runs=4, paired_bundle=str(base)), tmp_path / "obs"
    )
    assert obs.paired is None and obs.paired_error.startswith(f"the base bundle {base} was not timed: ")


def test_the_paired_bundle_reaches_the_observer_only_where_the_base_has_that_bundle(tmp_path: Path) -> None:
    bundles.mlp_bundle(tmp_path / "base" / TARGET.bundle_key)
    options = dataclasses.replace(VerifyOptions(), paired_bundles=str(tmp_path / "base"))
    args = observer_args(Launch(tmp_path / "head", TARGET, tmp_path / "obs", options, CPU), tmp_path)
    assert args[args.index("--paired-bundle") + 1] == str((tmp_path / "base" / TARGET.bundle_key).resolve())
    other = dataclasses.replace(TARGET, opset=18)
    assert "--paired-bundle" not in observer_args(
        Launch(tmp_path / "head", other, tmp_path / "obs", options, CPU), tmp_path
    )
    assert "--paired-bundle" not in observer_args(
        Launch(tmp_path / "head", TARGET, tmp_path / "obs", VerifyOptions(), CPU), tmp_path
    )


def test_a_base_bundle_of_the_same_files_is_not_timed_beside_the_head(tmp_path: Path) -> None:
    import shutil

    head = bundles.mlp_bundle(tmp_path / "head")
    shutil.copytree(head, tmp_path / "base" / TARGET.bundle_key)
    options = dataclasses.replace(VerifyOptions(), paired_bundles=str(tmp_path / "base"))
    assert "--paired-bundle" not in observer_args(
        Launch(head, TARGET, tmp_path / "obs", options, CPU), tmp_path
    )
    other = bundles.mlp_bundle(tmp_path / "other", doc="another commit's")
    assert "--paired-bundle" in observer_args(Launch(other, TARGET, tmp_path / "obs", options, CPU), tmp_path)
