"""The android runner's adb sequence, against a stand-in adb whose device is a directory here.

The observer is a stand-in too (tests/support/standin_observer.py: it copies the bundle's reference
outputs and measures nothing), so these tests prove the transport and the plan, never numerics;
tests/e2e/test_android_runner.py runs the real native observer through the same sequence.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
import urllib.error
import zipfile
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from ci_onnx import config, matrix
from ci_onnx import plan as planning
from ci_onnx.contracts.errors import ConfigError, EnvironmentProblem
from ci_onnx.contracts.target import Status, Target
from ci_onnx.contracts.verify_options import VerifyOptions
from ci_onnx.plan import cijobs
from ci_onnx.runners import adb as adb_mod
from ci_onnx.runners import android, base
from ci_onnx.verify import stage
from tests import bundles
from tests.conftest import FakeIndex
from tests.support import standin_adb
from tests.unit.test_plan import INDEX
from tests.unit.test_runners import cfg

STANDIN_OBSERVER = Path(__file__).parents[1] / "support" / "standin_observer.py"
RELEASE = "1.29.0"


@pytest.fixture
def device(tmp_path: Path) -> dict[str, Any]:
    """A stand-in adb first on PATH, its device's /data/local/tmp under tmp_path/device."""
    bin_dir, root = tmp_path / "bin", tmp_path / "device"
    standin_adb.install(bin_dir, root)
    environ = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path)}
    return {"root": root, "environ": environ, "adb": adb_mod.Adb.from_environ(environ)}


def test_push_shell_pull_round_trip(device: dict[str, Any], tmp_path: Path) -> None:
    adb: adb_mod.Adb = device["adb"]
    src = tmp_path / "payload"
    (src / "sub").mkdir(parents=True)
    (src / "sub" / "a.bin").write_bytes(bytes(range(256)))
    adb.check_device()
    assert adb.push(src, "/data/local/tmp/x/payload").ok
    done = adb.shell(["sh", "-c", "cat /data/local/tmp/x/payload/sub/a.bin | wc -c"], timeout=30)
    assert (done.returncode, done.stdout.strip()) == (0, "256")
    assert adb.shell(["cp", "-r", "/data/local/tmp/x/payload", "/data/local/tmp/x/back"], timeout=30).ok
    assert adb.pull("/data/local/tmp/x/back", tmp_path / "pulled").ok
    assert (tmp_path / "pulled" / "sub" / "a.bin").read_bytes() == bytes(range(256))
    assert adb.getprop("ro.product.cpu.abi") == "x86_64"


@pytest.mark.parametrize("legacy", [False, True])
def test_the_remote_exit_status_comes_back_even_from_an_adb_that_loses_it(
    device: dict[str, Any], legacy: bool
) -> None:
    standin_adb.configure(device["root"], legacy=legacy)
    adb: adb_mod.Adb = device["adb"]
    failed = adb.shell(["sh", "-c", "echo partial; echo boom >&2; exit 3"], timeout=30)
    assert (failed.returncode, failed.ok, failed.stdout.strip()) == (3, False, "partial")
    assert "boom" in failed.stderr
    crashed = adb.shell(["sh", "-c", "kill -SEGV $$"], timeout=30)
    assert crashed.describe_failure().startswith("killed by SIGSEGV")
    assert adb.shell(["true"], timeout=30).ok


def test_a_hung_remote_command_is_a_timeout_and_is_stopped_on_the_device(device: dict[str, Any]) -> None:
    adb: adb_mod.Adb = device["adb"]
    program = device["root"] / "hang.sh"
    # it leaves adb's process group (setsid), as a remote process does: killing adb leaves it running
    program.write_text(
        '#!/bin/sh\n[ -n "$DETACHED" ] || DETACHED=1 exec setsid -w "$0"\n'
        'echo $$ > "$(dirname "$0")/pid"\nwhile :; do sleep 1; done\n'
    )
    program.chmod(0o755)
    done = adb.shell(["/data/local/tmp/hang.sh"], timeout=3)
    assert done.timed_out and not done.ok
    assert done.describe_failure().startswith("timed out after")
    pid = (device["root"] / "pid").read_text().strip()
    # gone, or a zombie nobody reaps (a container's init may not)
    state = adb.shell(
        ["sh", "-c", f"sed -n 's/^State:[[:space:]]*//p' /proc/{pid}/status 2>/dev/null"], timeout=10
    )
    assert state.stdout.strip()[:1] in ("", "Z"), state.stdout


@pytest.mark.parametrize(
    ("settings", "serial", "message"),
    [
        ({"state": "none"}, "", "adb: the device is not attached: boot an emulator or plug in a device"),
        ({"state": "unauthorized"}, "", "adb: the device is unauthorized: accept the USB debugging prompt"),
        ({"state": "offline"}, "", "adb: the device is offline: reconnect it"),
        ({}, "R58M1234", "adb: device R58M1234 is not attached"),
    ],
)
def test_a_device_that_is_not_there_is_one_line(
    device: dict[str, Any], settings: dict[str, str], serial: str, message: str
) -> None:
    standin_adb.configure(device["root"], **settings)
    environ = {**device["environ"], "ANDROID_SERIAL": serial} if serial else device["environ"]
    with pytest.raises(EnvironmentProblem, match="^" + message) as caught:
        adb_mod.Adb.from_environ(environ).check_device()
    assert "\n" not in caught.value.message


def test_no_adb_at_all_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(EnvironmentProblem, match="the android runner needs adb"):
        adb_mod.find_adb({"PATH": str(tmp_path)})


# The runner kind over the stand-in: a small AAR of the right layout, the stand-in observer.


def fake_aar(path: Path, release: str = RELEASE, abis: Sequence[str] = ("x86_64", "arm64-v8a")) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("AndroidManifest.xml", '<manifest><uses-sdk android:minSdkVersion="24" /></manifest>')
        z.writestr("headers/onnxruntime_c_api.h", "/* headers */\n")
        z.writestr("headers/nnapi_provider_factory.h", "/* nnapi */\n")
        for abi in abis:
            z.writestr(f"jni/{abi}/libonnxruntime.so", b"\x7fELF" + b"\0" * 64 + f"VERS_{release}\0".encode())
    return path


class FakeNative:
    """The native kind's public functions as the contract states them, over the stand-in observer."""

    def __init__(self) -> None:
        self.built: list[dict[str, Any]] = []
        self.RUNNER = SimpleNamespace(collect=base.read_observation)

    def build(
        self, out_dir: Path, *, cc: str, include_dir: Path, flags: Sequence[str] = (), environ: Any = None
    ) -> Path:
        self.built.append({"cc": cc, "include_dir": include_dir})
        out_dir.mkdir(parents=True, exist_ok=True)
        program = out_dir / "observe"
        program.write_text(f"#!{sys.executable}\n" + STANDIN_OBSERVER.read_text())
        program.chmod(0o755)
        return program

    @staticmethod
    def observer_argv(
        program: str,
        *,
        lib: str,
        bundle: str,
        out: str,
        target: Target,
        options: VerifyOptions,
        batch_sizes: Sequence[int],
    ) -> list[str]:
        argv = [program, "--lib", lib, "--bundle", bundle, "--target-id", target.id, "--ep", target.provider]
        argv += ["--out", out, "--latency-runs", str(options.latency_runs)]
        argv += ["--batch-sizes", ",".join(map(str, batch_sizes))]
        return argv + (["--strict-fallback"] if options.strict_fallback else [])


@pytest.fixture
def runner_env(device: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    native = FakeNative()
    monkeypatch.setattr(android, "_native", lambda: native)
    ndk = tmp_path / "ndk"
    clang = ndk / "toolchains/llvm/prebuilt/linux-x86_64/bin/x86_64-linux-android24-clang"
    clang.parent.mkdir(parents=True)
    clang.write_text("#!/bin/sh\nexit 1\n")
    environ = {
        **device["environ"],
        android.AAR_ENV: str(fake_aar(tmp_path / "onnxruntime-android.aar")),
        "ANDROID_NDK_LATEST_HOME": str(ndk),
    }
    how = base.Provisioning(tmp_path / "cache", environ)
    return {**device, "native": native, "how": how, "clang": clang}


def verify(runner_env: dict[str, Any], tmp_path: Path, target: Target, **options: Any) -> Any:
    b = bundles.mlp_bundle(tmp_path / "mlp")
    env = android.RUNNER.provision(target.runtime, target.provider, runner_env["how"])
    return stage.verify(
        b,
        target,
        tmp_path / "out",
        VerifyOptions(**options),
        base_env=runner_env["how"].environ,
        environment=env,
    )


def target(provider: str = "cpu", api_level: int = 34) -> Target:
    return Target(RELEASE, provider, 17, "onnx", runner="android", api_level=api_level)


@pytest.mark.parametrize("provider", ["cpu", "nnapi"])
def test_the_adb_sequence_pushes_runs_and_pulls_a_cell(
    runner_env: dict[str, Any], tmp_path: Path, provider: str
) -> None:
    t = target(provider)
    written = verify(runner_env, tmp_path, t, latency_runs=7)
    r = written.result
    assert r.status == Status.PASSED, r.summary
    assert r.target.id == f"android-api34-ort{RELEASE}-{provider}-op17-onnx"
    env = r.observed.environment
    assert env is not None and env.platform == "android-34-x86_64 (emulator)"
    # built with the NDK's clang for the ABI the device reported, on the AAR's headers
    assert runner_env["native"].built[0]["cc"] == str(runner_env["clang"])
    assert (runner_env["native"].built[0]["include_dir"] / "onnxruntime_c_api.h").is_file()
    obs_dir = tmp_path / "out" / stage.OBSERVATIONS / t.id
    argv = json.loads((obs_dir / "argv.json").read_text())
    remote = f"{runner_env['root']}/onnx-gate/{t.id}"
    assert argv[:3] == [f"{remote}/observe", "--lib", f"{remote}/libonnxruntime.so"]
    assert argv[argv.index("--ep") + 1] == provider
    assert argv[argv.index("--batch-sizes") + 1] == "1,8"
    obs = json.loads((obs_dir / "observation.json").read_text())
    assert android.EMULATOR_SCOPE in obs["notes"]
    assert not (runner_env["root"] / "onnx-gate" / t.id).exists()  # the device is left tidy


@pytest.mark.parametrize(
    ("mode", "why"),
    [
        ("exit", "exit code 3: observe: --ep bogus: unknown execution provider"),
        ("crash", "killed by SIGSEGV"),
        ("hang", "timed out after"),
    ],
)
def test_an_observer_that_fails_crashes_or_hangs_on_the_device_is_an_error_result(
    runner_env: dict[str, Any], tmp_path: Path, mode: str, why: str
) -> None:
    standin_adb.configure(runner_env["root"], observer=mode)
    r = verify(runner_env, tmp_path, target(), timeout_s=3).result
    assert r.status == Status.ERROR
    runner_check = r.check("runner")
    assert runner_check is not None and why in runner_check.message


def test_a_device_at_another_api_level_is_an_error_result(runner_env: dict[str, Any], tmp_path: Path) -> None:
    r = verify(runner_env, tmp_path, target(api_level=30)).result
    assert r.status == Status.ERROR
    assert "the cell is Android API 30, the device runs API 34" in r.summary + str(r.checks)


def test_provisioning_problems_are_one_line(runner_env: dict[str, Any], tmp_path: Path) -> None:
    how: base.Provisioning = runner_env["how"]
    wrong = fake_aar(tmp_path / "old.aar", release="1.28.0")
    with pytest.raises(EnvironmentProblem, match=r"jni/x86_64/libonnxruntime.so is not onnxruntime 1.29.0"):
        android.RUNNER.provision(
            RELEASE, "cpu", dataclasses.replace(how, environ={**how.environ, android.AAR_ENV: str(wrong)})
        )
    arm_only = fake_aar(tmp_path / "arm.aar", abis=("arm64-v8a",))
    with pytest.raises(
        EnvironmentProblem, match=r"no jni/x86_64/libonnxruntime.so; the AAR carries arm64-v8a"
    ):
        android.RUNNER.provision(
            "1.29.1", "cpu", dataclasses.replace(how, environ={**how.environ, android.AAR_ENV: str(arm_only)})
        )
    no_ndk = {k: v for k, v in how.environ.items() if k != "ANDROID_NDK_LATEST_HOME"}
    with pytest.raises(EnvironmentProblem, match="builds its observer with the Android NDK"):
        android.RUNNER.provision(RELEASE, "cpu", dataclasses.replace(how, environ=no_ndk))
    standin_adb.configure(runner_env["root"], state="unauthorized")
    with pytest.raises(EnvironmentProblem, match="unauthorized"):
        android.RUNNER.provision(RELEASE, "cpu", how)


def test_a_release_maven_central_lacks_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asked = []

    def not_found(url: str, timeout: float) -> None:
        asked.append(url)
        raise urllib.error.HTTPError(url, 404, "Not Found", {}, None)  # type: ignore[arg-type]

    monkeypatch.setattr(android.urllib.request, "urlopen", not_found)
    with pytest.raises(
        EnvironmentProblem, match=r"Maven Central has no com.microsoft.onnxruntime:onnxruntime-android:9.9.9"
    ):
        android.aar_path("9.9.9", base.Provisioning(tmp_path, {}))
    assert asked == [android.MAVEN_URL.format(v="9.9.9")]
    assert asked[0].endswith("/onnxruntime-android/9.9.9/onnxruntime-android-9.9.9.aar")


# The matrix: android cells, their API level in the id, their job.


def test_android_cells_say_their_api_level_and_go_to_the_android_job() -> None:
    index = FakeIndex({**INDEX.releases, "onnxruntime": [RELEASE, *INDEX.releases["onnxruntime"]]})
    c = cfg(runners=("python", "android"), providers=("cpu", "xnnpack", "nnapi"), runtimes=(RELEASE,))
    plan = planning.expand(
        dataclasses.replace(c, targets=dataclasses.replace(c.targets, android_api_level=30)), index
    )
    android_ids = [t.id for t in plan.targets if t.runner == "android"]
    assert android_ids == [f"android-api30-ort{RELEASE}-{p}-op17-dynamo" for p in ("cpu", "nnapi", "xnnpack")]
    for tid in android_ids:
        assert Target.from_id(tid) == plan.get(tid)
    out = cijobs.github_outputs(plan)
    (entry,) = json.loads(out["matrix-android"])["include"]  # one emulator boot for the three EPs
    assert (entry["job"], entry["api-level"], entry["runs-on"]) == ("android", 30, ["ubuntu-latest"])
    assert (
        entry["targets"] == android_ids
        and entry["name"] == f"verify android-api30-ort{RELEASE} cpu, nnapi, xnnpack · 3 targets"
    )
    assert out["android-targets"] == "3"
    assert "android-api30" not in out["matrix"] + out["matrix-runner"] + out["matrix-node"]
    assert [t.runner for t in plan.targets if t.provider == "nnapi"] == ["android"]  # python offers no nnapi


def test_the_api_level_is_declared_under_targets_android(tmp_path: Path) -> None:
    base_text = (Path(__file__).parents[2] / "examples" / "tinycnn" / "onnx-gate.yml").read_text()
    path = tmp_path / "onnx-gate.yml"
    path.write_text(base_text)
    assert config.load(path).targets.android_api_level == 34
    path.write_text(base_text + "\n" if base_text.endswith("\n") else base_text)
    doc = base_text.replace("targets:\n", "targets:\n  android: {api_level: 35}\n", 1)
    assert doc != base_text
    path.write_text(doc)
    with pytest.raises(
        ConfigError, match=r"targets\.android\.api_level: 35 is greater than the maximum of 34"
    ):
        config.load(path)
    assert "android" in matrix.runners() and "nnapi" in matrix.providers()
    shutil.rmtree(tmp_path / "cache", ignore_errors=True)


# The CI job: written by init only for android cells, linted like every workflow the project writes.


def _android_workflows(tmp: Path) -> list[Path]:
    from tests.unit import test_workflows

    for action_file in test_workflows.ACTION_FILES:
        dest = tmp / action_file.relative_to(test_workflows.ROOT)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(action_file, dest)
    from ci_onnx.contracts import proc
    from ci_onnx.orchestration import scaffold

    proc.run(["git", "init", "-q", str(tmp)], timeout=60, check=True)
    paths = []
    for name, settings in (
        ("remote", scaffold.Settings(android=True)),
        ("local", scaffold.Settings(action="./", android=True)),
    ):
        for rel, content in scaffold.starter_files(settings).items():
            if rel.suffix == ".yml" and rel.parts[0] == ".github":
                path = tmp / ".github/workflows" / f"{name}-{rel.name}"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(content)
                paths.append(path)
    return paths


def test_init_writes_the_android_job_only_with_android_cells(tmp_path: Path) -> None:
    from ci_onnx.orchestration import scaffold

    plain = scaffold.starter_files(scaffold.Settings())
    assert all("verify-android" not in text for text in plain.values())
    files = scaffold.starter_files(scaffold.Settings(android=True))
    gate = files[scaffold.WORKFLOWS / "onnx-gate.yml"]
    assert "verify-android:" in gate and "matrix-android:" in gate
    assert "reactivecircus/android-emulator-runner@e89f39f1abbbd05b1113a29cf4db69e7540cae5a # v2.37.0" in gate
    assert 'KERNEL=="kvm", GROUP="kvm", MODE="0666"' in gate
    assert 'pip install --disable-pip-version-check --quiet "$INSTALL_FROM"' in gate
    assert "INSTALL_FROM: git+https://github.com/onnx-gate/onnx-gate@v1" in gate
    # the config it writes has the android cells the job serves
    path = tmp_path / "onnx-gate.yml"
    path.write_text(files[Path(scaffold.CONFIG_FILE)].replace("model.py:build", "model.py:build"))
    cfg_written = config.parse(path.read_text(), path)
    assert "android" in cfg_written.targets.runners and cfg_written.targets.android_api_level == 34
    assert {"cpu", "xnnpack", "nnapi"} <= set(cfg_written.targets.providers)


def test_the_android_workflows_pass_actionlint_and_the_schemas(tmp_path: Path) -> None:
    from ruamel.yaml import YAML

    from ci_onnx.contracts import proc
    from tests.unit import test_workflows

    paths = _android_workflows(tmp_path)
    lint = proc.run([test_workflows._tool("actionlint"), "-no-color", *paths], timeout=120, cwd=tmp_path)
    assert lint.ok, lint.stdout + lint.stderr
    schema = proc.run(
        [test_workflows._tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows", *paths],
        timeout=120,
    )
    assert schema.ok, schema.stdout + schema.stderr
    for path in paths:
        jobs = YAML(typ="safe").load(path.read_text())["jobs"]
        if "report" in jobs:
            assert "verify-android" in jobs["report"]["needs"], path.name
        job = jobs["verify-android"]
        assert job["strategy"]["fail-fast"] is False and job["permissions"] == {"contents": "read"}
        for step in job["steps"]:
            assert "${{" not in step.get("run", ""), f"{path.name}: {step.get('name')}"
            assert "${{" not in step.get("with", {}).get("script", ""), f"{path.name}: {step.get('name')}"
        emulator = [s for s in job["steps"] if "android-emulator-runner" in str(s.get("uses", ""))]
        assert [s["with"]["api-level"] for s in emulator] == ["${{ matrix.api-level }}"] * 3
        assert all(s["with"]["arch"] == "x86_64" for s in emulator)
        # a snapshot that hangs is retried with a cold boot; a gate that fails still fails the job
        cold = emulator[2]
        assert "-no-snapshot " in cold["with"]["emulator-options"] and "failure" in cold["if"]
        assert job["steps"][-2]["run"].rstrip().endswith("exit 1")


def test_onnx_gate_init_android_writes_the_cells_and_the_job(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from ci_onnx.cli import cli

    result = CliRunner().invoke(cli, ["init", str(tmp_path), "--android"])
    assert result.exit_code == 0, result.output
    gate = (tmp_path / ".github/workflows/onnx-gate.yml").read_text()
    nightly = (tmp_path / ".github/workflows/onnx-gate-nightly.yml").read_text()
    assert "verify-android:" in gate and "verify-android:" in nightly
    written = (tmp_path / "onnx-gate.yml").read_text()
    assert "runners: [python, android]" in written and "android: {api_level: 34}" in written
    plain = tmp_path / "plain"
    assert CliRunner().invoke(cli, ["init", str(plain)]).exit_code == 0
    assert "android" not in (plain / ".github/workflows/onnx-gate.yml").read_text()


@pytest.mark.parametrize(
    "abi", ["/../../../victim", "../../victim", "x86_64/../../victim", "x86_64;touch pwned", "mips"]
)
def test_a_device_reported_abi_outside_the_four_known_names_touches_no_path(
    runner_env: dict[str, Any], tmp_path: Path, abi: str
) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("still here")
    standin_adb.configure(runner_env["root"], props={**standin_adb.PROPS, "ro.product.cpu.abi": abi})
    with pytest.raises(EnvironmentProblem, match=r"reports ABI .*not one of x86_64, arm64-v8a"):
        android.RUNNER.provision(RELEASE, "cpu", runner_env["how"])
    assert (victim / "keep.txt").read_text() == "still here"
    assert not list((tmp_path / "cache").glob("**/ort*")), "nothing was made from the reported ABI"


def test_a_device_model_name_reaches_the_report_as_plain_words(runner_env: dict[str, Any]) -> None:
    hostile = "Pixel</details><script>x</script>\n## ✅ all passed [x](http://e.vil) @team" + "A" * 200
    standin_adb.configure(runner_env["root"], props={**standin_adb.PROPS, "ro.product.model": hostile})
    device = android.Device.probe(adb_mod.Adb.from_environ(runner_env["how"].environ))
    assert len(device.model) <= android.MODEL_MAX
    assert not set(device.model) & set("<>\n[]@#`|*\\&")
