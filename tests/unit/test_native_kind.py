"""The native runner kind without a runtime: its argv, its build, its errors, its TensorProto codec
(compiled with the host's C compiler, byte for byte against the Python codec)."""

from __future__ import annotations

import fnmatch
import json
import shutil
import subprocess
import tomllib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from ci_onnx import matrix
from ci_onnx.contracts import serde
from ci_onnx.contracts import tensorproto as tp
from ci_onnx.contracts.errors import EnvironmentProblem
from ci_onnx.contracts.results import SCHEMA_VERSION, Environment, Observation
from ci_onnx.contracts.target import Target
from ci_onnx.contracts.verify_options import VerifyOptions
from ci_onnx.plan import cijobs
from ci_onnx.runners import base, native

ROOT = Path(__file__).parents[2]
CC = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
needs_cc = pytest.mark.skipif(CC is None, reason="no C compiler on PATH")


def test_observer_argv_is_the_contract() -> None:
    target = Target("1.29.0", "xnnpack", 17, "dynamo", runner="native")
    argv = native.observer_argv(
        "/bin/observe",
        lib="/l/libonnxruntime.so",
        bundle="/b",
        out="/o",
        target=target,
        options=VerifyOptions(latency_runs=7, strict_fallback=True),
        batch_sizes=[8, 1],
    )
    assert argv == [
        "/bin/observe", "--lib", "/l/libonnxruntime.so", "--bundle", "/b", "--target-id", target.id,
        "--ep", "xnnpack", "--ep-name", "XnnpackExecutionProvider", "--ep-append", "XNNPACK",
        "--out", "/o", "--latency-runs", "7", "--batch-sizes", "1,8", "--strict-fallback",
    ]  # fmt: skip
    plain = native.observer_argv(
        "o", lib="l", bundle="b", out="o", target=target, options=VerifyOptions(), batch_sizes=[]
    )
    assert "--strict-fallback" not in plain and plain[plain.index("--batch-sizes") + 1] == ""


def _fake_cc(tmp_path: Path, body: str) -> Path:
    cc = tmp_path / "fake-cc"
    cc.write_text(f'#!/bin/sh\necho "$@" >> "{tmp_path}/cc-calls"\n{body}\n')
    cc.chmod(0o755)
    return cc


def _include(tmp_path: Path) -> Path:
    inc = tmp_path / "include"
    inc.mkdir(exist_ok=True)
    (inc / "onnxruntime_c_api.h").write_text("/* the headers */\n")
    return inc


WRITES_OUTPUT = 'while [ $# -gt 0 ]; do if [ "$1" = -o ]; then touch "$2"; fi; shift; done'


def test_build_compiles_with_the_strict_flags_and_caches_by_hash(tmp_path: Path) -> None:
    cc = _fake_cc(tmp_path, WRITES_OUTPUT)
    inc = _include(tmp_path)
    first = native.build(tmp_path / "out", cc=str(cc), include_dir=inc, environ={"PATH": "/usr/bin:/bin"})
    calls = (tmp_path / "cc-calls").read_text().splitlines()
    assert len(calls) == 1
    args = calls[0].split()
    for flag in ("-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-ldl"):
        assert flag in args
    assert args[args.index("-I") + 1] == str(inc)
    assert {Path(a).name for a in args if a.endswith(".c")} == {
        "observe.c",
        "tensorproto.c",
        "json.c",
        "manifest.c",
    }
    again = native.build(tmp_path / "out", cc=str(cc), include_dir=inc, environ={"PATH": "/usr/bin:/bin"})
    assert again == first and len((tmp_path / "cc-calls").read_text().splitlines()) == 1  # cached
    flagged = native.build(
        tmp_path / "out", cc=str(cc), include_dir=inc, flags=["--target=x86_64-linux-android24"], environ={}
    )
    assert flagged != first and "--target=x86_64-linux-android24" in (tmp_path / "cc-calls").read_text()
    (inc / "onnxruntime_c_api.h").write_text("/* another release's headers */\n")
    assert native.build(tmp_path / "out", cc=str(cc), include_dir=inc, environ={}) != first


def test_a_build_that_fails_is_one_line_with_the_compilers_error(tmp_path: Path) -> None:
    cc = _fake_cc(tmp_path, 'echo "observe.c:12:3: error: unknown type name OrtApi" >&2\nexit 1')
    with pytest.raises(EnvironmentProblem) as err:
        native.build(tmp_path / "out", cc=str(cc), include_dir=_include(tmp_path), environ={})
    assert "\n" not in err.value.message
    assert "observe.c does not build" in err.value.message and "unknown type name OrtApi" in err.value.message
    assert not list((tmp_path / "out").glob("observe-*"))
    with pytest.raises(EnvironmentProblem, match=r"holds no onnxruntime_c_api\.h"):
        native.build(tmp_path / "out", cc=str(cc), include_dir=tmp_path / "nowhere", environ={})


def test_no_compiler_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(EnvironmentProblem, match=r"needs a C compiler \(cc, gcc or clang"):
        native.compiler({"PATH": str(tmp_path)})
    with pytest.raises(EnvironmentProblem, match="CC=nope-cc is not on PATH"):
        native.compiler({"PATH": str(tmp_path), "CC": "nope-cc"})


def _fake_npm(tmp_path: Path) -> dict[str, str]:
    """An npm whose registry has no 1.19.9 and lists a few releases."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    npm = bin_dir / "npm"
    versions = json.dumps(["1.8.0", "1.11.0", "1.12.0", "1.24.1", "1.28.0-dev.20260624-ba45260eed", "1.30.0"])
    npm.write_text(
        "#!/bin/sh\n"
        f"if [ \"$1\" = view ]; then echo '{versions}'; exit 0; fi\n"
        'echo "npm error code ETARGET" >&2\necho "npm error notarget No matching version" >&2\nexit 1\n'
    )
    npm.chmod(0o755)
    return {"PATH": f"{bin_dir}:/usr/bin:/bin"}


def test_an_unknown_release_is_one_line_naming_the_releases_with_a_library(tmp_path: Path) -> None:
    how = base.Provisioning(tmp_path / "cache", _fake_npm(tmp_path))
    with pytest.raises(EnvironmentProblem) as err:
        native.library("1.19.9", how)
    message = err.value.message
    assert "\n" not in message
    assert "no libonnxruntime for release 1.19.9: onnxruntime-node has no release 1.19.9" in message
    assert message.endswith("releases with a library: 1.12.0, 1.24.1, 1.29.0, 1.30.0")
    assert not (tmp_path / "cache" / "npm" / "onnxruntime-node-1.19.9").exists()


def test_a_release_before_the_c_api_it_needs_and_another_platform_are_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    how = base.Provisioning(tmp_path, {"PATH": "/usr/bin:/bin"})
    with pytest.raises(EnvironmentProblem, match=r"1.11.0 predates ORT C API 12; .* releases 1.12 and newer"):
        native.library("1.11.0", how)
    monkeypatch.setattr(native.sys, "platform", "darwin")
    with pytest.raises(
        EnvironmentProblem, match="runs on Linux here, not darwin; macOS and Windows are designed"
    ):
        native.library("1.24.1", how)


def test_the_runner_kind_is_declared_data() -> None:
    info = matrix.runners()["native"]
    assert base.get("native") is native.RUNNER and native.RUNNER.kind == "native"
    assert set(info.providers) <= set(matrix.providers())
    assert info.index_name("cpu") == "npm:onnxruntime-node"
    assert Target.from_id("native-ort1.29.0-cpu-op17-dynamo").runner == "native"


def test_the_package_data_ships_the_observer_sources() -> None:
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"][
        "ci_onnx"
    ]
    sources = [p.relative_to(ROOT / "ci_onnx").as_posix() for p in native._sources()]
    assert {Path(s).name for s in sources} == {
        *("observe.c", "tensorproto.c", "tensorproto.h", "json.c", "json.h", "manifest.c", "manifest.h")
    }
    assert all(any(fnmatch.fnmatchcase(s, g) for g in globs) for s in sources), sources


def _observation(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    env = Environment("1.29.0", ("CPUExecutionProvider",), ("CPUExecutionProvider",), "Linux", "ort-native")
    obs = Observation(
        SCHEMA_VERSION,
        "native-ort1.29.0-cpu-op17-dynamo",
        env,
        outputs={"test_data_set_0": {"y": "test_data_set_0/output_0.pb"}},
        providers_requested=("CPUExecutionProvider",),
    )
    (out / "observation.json").write_text(serde.dumps(obs))


VERBOSE = (
    "[V:onnxruntime:, session_state.cc:1378 VerifyEachNodeIsAssignedToAnEp] Node placements\n"
    "[V:onnxruntime:, session_state.cc:1381 VerifyEachNodeIsAssignedToAnEp]  All nodes placed on "
    "[CPUExecutionProvider]. Number of nodes: 3\n"
)


def test_collect_prefers_the_profile_and_falls_back_to_the_verbose_log(tmp_path: Path) -> None:
    _observation(tmp_path / "a")
    events = [
        {
            "cat": "Node",
            "name": "Conv_0_kernel_time",
            "dur": 40,
            "args": {"provider": "CPUExecutionProvider"},
        },
        {"cat": "Node", "name": "Relu_1_kernel_time", "dur": 2, "args": {"provider": "CPUExecutionProvider"}},
    ]
    (tmp_path / "a" / native.PLACEMENT.profile).write_text(json.dumps(events))
    (tmp_path / "a" / native.PLACEMENT.verbose_log).write_text(VERBOSE)
    placed = native.RUNNER.collect(tmp_path / "a").placement
    assert placed is not None and placed.source == "profile"
    assert placed.nodes_by_provider == {"CPUExecutionProvider": 2}

    _observation(tmp_path / "b")
    (tmp_path / "b" / native.PLACEMENT.profile).write_text("[]")
    (tmp_path / "b" / native.PLACEMENT.verbose_log).write_text(VERBOSE)
    placed = native.RUNNER.collect(tmp_path / "b").placement
    assert placed is not None and placed.source == "verbose-log"
    assert placed.nodes_by_provider == {"CPUExecutionProvider": 3}

    _observation(tmp_path / "c")
    (tmp_path / "c" / native.PLACEMENT.verbose_log).write_text("nothing placed\n")
    obs = native.RUNNER.collect(tmp_path / "c")
    assert obs.placement is None and "hold no node placements" in obs.placement_error

    _observation(tmp_path / "d")
    (tmp_path / "d" / native.PLACEMENT.profile).write_text("{not json")
    with pytest.raises(base.CollectError, match="unreadable profile trace"):
        native.RUNNER.collect(tmp_path / "d")


# The C codec, compiled with its test driver (decode a file, encode it back).


@pytest.fixture(scope="module")
def codec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    assert CC is not None
    out = tmp_path_factory.mktemp("codec") / "tensorproto"
    src = native.SOURCES / "tensorproto.c"
    subprocess.run(
        [CC, *native.BUILD_FLAGS, "-DONNX_GATE_TENSORPROTO_MAIN", str(src), "-o", str(out)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return out


def _files() -> dict[str, bytes]:
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(16)
    files: dict[str, bytes] = {}
    for dtype in ["float32", "float64", "int32", "int64", "uint8", "int8", "bool", "float16", "uint16",
                  "int16", "uint32", "uint64", "complex64"]:  # fmt: skip
        a = (rng.normal(size=(2, 3)) * 50).astype(dtype)
        files[f"raw-{dtype}"] = tp.dumps(a, "x")
        files[f"numpy_helper-{dtype}"] = numpy_helper.from_array(a, "y").SerializeToString()
        code = helper.np_dtype_to_tensor_dtype(a.dtype)
        if dtype not in ("complex64", "float16"):
            files[f"typed-{dtype}"] = helper.make_tensor(
                "t", code, [2, 3], a.ravel().tolist()
            ).SerializeToString()
    files["typed-float16-bits"] = helper.make_tensor(
        "h", TensorProto.FLOAT16, [3], np.array([1.5, -2, 65504], np.float16).view(np.uint16).tolist()
    ).SerializeToString()
    files["scalar"] = tp.dumps(np.float32(3.5))
    files["empty"] = tp.dumps(np.zeros((0, 3), np.float32), "e")
    files["strings"] = tp.dumps(np.array(["a", "héllo", ""], dtype=object), "s")
    files["int4"] = helper.make_tensor("q", TensorProto.INT4, [3], [1, -2, 3]).SerializeToString()
    files["uint4-raw-odd"] = tp.dumps(np.array([1, 15, 7], np.uint8), "u", tp.UINT4)
    files["bfloat16"] = tp.dumps(np.array([1, 2, 3], np.uint16), "b", tp.BFLOAT16)
    files["long-name"] = tp.dumps(np.arange(300, dtype=np.int64).reshape(3, 100), "n" * 200)
    return files


@needs_cc
def test_the_c_codec_writes_what_the_python_codec_writes(codec: Path, tmp_path: Path) -> None:
    files = _files()
    for name, data in files.items():
        src, dst = tmp_path / f"{name}.pb", tmp_path / f"{name}.out.pb"
        src.write_bytes(data)
        done = subprocess.run([str(codec), str(src), str(dst)], capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, (name, done.stderr)
        t = tp.loads_tensor(data)
        assert dst.read_bytes() == tp.dumps(t.array, t.name, t.data_type), name


@needs_cc
@pytest.mark.parametrize(
    ("cut", "why"),
    [
        (lambda b: b[:-5], "truncated field"),
        (lambda b: b + b"\x08", "truncated varint"),
        (lambda b: b + b"\x0f", "unsupported wire type 7"),
        (lambda b: b"\x08\x02\x10\x01\x4a\x03abc", "3 raw bytes for 2 elements"),
    ],
)
def test_a_broken_file_is_one_line_naming_it(
    codec: Path, tmp_path: Path, cut: Callable[[bytes], bytes], why: str
) -> None:
    src = tmp_path / "bad.pb"
    src.write_bytes(cut(tp.dumps(np.arange(6, dtype=np.float32).reshape(2, 3), "x")))
    done = subprocess.run([str(codec), str(src), str(tmp_path / "o.pb")], capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(f"{src}: not a TensorProto (")
    assert why in done.stderr
    with pytest.raises(tp.TensorProtoError):  # the Python codec refuses the same bytes
        tp.loads_tensor(src.read_bytes())


def test_native_cells_are_planned_from_npm_and_routed_to_a_runner_job() -> None:
    import dataclasses

    from ci_onnx import config
    from ci_onnx import plan as planning
    from tests.conftest import EXAMPLE_CONFIG, FakeIndex

    base_cfg = config.load(EXAMPLE_CONFIG)
    targets = dataclasses.replace(
        base_cfg.targets,
        runtimes=("1.29.0", "1.24.1"),
        providers=("cpu",),
        include=(),
        exclude=(),
        runners=("python", "native"),
    )
    cfg = dataclasses.replace(
        base_cfg,
        export=dataclasses.replace(base_cfg.export, opsets=(17,), exporters=("dynamo",)),
        targets=targets,
    )
    index = FakeIndex({"onnxruntime": ["1.29.0", "1.24.1"], "npm:onnxruntime-node": ["1.29.0", "1.24.1"]})
    plan = planning.expand(cfg, index)
    assert "npm:onnxruntime-node" in index.asked
    jobs = {t.id: cijobs.job_of(t) for t in plan.targets}
    assert jobs == {
        "ort1.29.0-cpu-op17-dynamo": "container",
        "ort1.24.1-cpu-op17-dynamo": "container",
        "native-ort1.29.0-cpu-op17-dynamo": "runner",
        "native-ort1.24.1-cpu-op17-dynamo": "runner",
    }
    entries = {v.targets[0].id: v.entry() for v in cijobs.verify_jobs(plan)}
    entry = entries["native-ort1.24.1-cpu-op17-dynamo"]
    assert (entry["runs-on"], entry["runner"], entry["job"]) == (["ubuntu-latest"], "native", "runner")
    assert len(entries) == 4, "each release of each kind is an environment of its own"
