"""The android runner kind: the native C observer on an Android device or emulator, driven over adb.

Provision takes the official onnxruntime-android AAR of the cell's release (Maven Central's
``com.microsoft.onnxruntime:onnxruntime-android:<release>``, cached; or the file ``$ONNX_GATE_ANDROID_AAR``
names), unpacks its C headers and ``jni/<abi>/libonnxruntime.so`` for the ABI the device reports, and
builds the native observer (ci_onnx.runners.native) with the NDK's clang for that ABI
(``$ANDROID_NDK_LATEST_HOME``, as GitHub's Ubuntu images carry it). Launch pushes observer, library
and bundle to ``/data/local/tmp/onnx-gate/<target>``, runs the observer there with ``adb shell``,
pulls the out directory back, and collect reads it with the native kind's collect: the judge then
runs here, in Python, the same for every kind.

``$ONNX_GATE_ANDROID_CC`` and ``$ONNX_GATE_ANDROID_LIB`` swap the NDK compiler and the AAR's library
for a host compiler and a host libonnxruntime: with a stand-in adb whose "device" is a directory of
the host, the whole adb sequence then runs the Linux build of the observer (the tests do this).

What an emulator cell proves (the note each android result carries): the Android build of the
release, op coverage and partitioning per EP, and numerics on x86_64. On an emulator NNAPI runs on
the nnapi-reference CPU driver, so the NNAPI EP registers with no accelerator behind it: ARM kernels
and NPU drivers stay unproven until the same observer, built for arm64-v8a, runs on a device.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import tempfile
import urllib.error
import urllib.request
import zipfile
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType

from ci_onnx.contracts import proc, serde
from ci_onnx.contracts.errors import EnvironmentProblem
from ci_onnx.contracts.results import Observation
from ci_onnx.host import envs
from ci_onnx.runners.adb import DEVICE_TIMEOUT_S, Adb
from ci_onnx.runners.base import OBSERVATION, Launch, Provisioning, RunnerEnv

KIND = "android"
PACKAGE = "com.microsoft.onnxruntime:onnxruntime-android"
MAVEN_URL = "https://repo1.maven.org/maven2/com/microsoft/onnxruntime/onnxruntime-android/{v}/onnxruntime-android-{v}.aar"
DEVICE_ROOT = "/data/local/tmp/onnx-gate"
AAR_ENV = "ONNX_GATE_ANDROID_AAR"
CC_ENV = "ONNX_GATE_ANDROID_CC"
LIB_ENV = "ONNX_GATE_ANDROID_LIB"
NDK_ENVS = ("ANDROID_NDK_LATEST_HOME", "ANDROID_NDK_HOME", "ANDROID_NDK_ROOT")
NDK_API = 24
"""The API level the observer is built for: the AAR's minSdkVersion (it runs on every newer one)."""
TRIPLES = {
    "x86_64": "x86_64-linux-android",
    "arm64-v8a": "aarch64-linux-android",
    "armeabi-v7a": "armv7a-linux-androideabi",
    "x86": "i686-linux-android",
}
"""Android ABI → the NDK's clang target triple."""
_MODEL_CHARS = re.compile(r"[^A-Za-z0-9 ._+()-]")
MODEL_MAX = 64
"""A device's model name, as shown: letters, digits and a little punctuation, at most 64 characters."""
DEVICE_FILE = "device.json"
DOWNLOAD_TIMEOUT_S = 300.0
READY = "onnx-gate-env.txt"
EMULATOR_SCOPE = (
    "an emulator cell proves the Android build of onnxruntime, op coverage and partitioning per EP, and "
    "numerics on x86_64; NNAPI runs on the nnapi-reference CPU driver (its EP registers with no "
    "accelerator behind it), so ARM kernels and NPU drivers stay unproven until it runs on a device"
)
DEVICE_SCOPE = "a device cell: numerics of {abi} kernels, and NNAPI on the device's own drivers ({model})"


def _native() -> ModuleType:
    """The native kind, whose observer and collect the android kind reuses."""
    import importlib

    return importlib.import_module("ci_onnx.runners.native")


@dataclasses.dataclass(frozen=True)
class Device:
    """What the device behind adb says of itself."""

    abi: str
    sdk: int
    model: str
    emulator: bool

    @classmethod
    def probe(cls, adb: Adb) -> Device:
        """What the device says, each value checked against its grammar before it reaches a path (the
        ABI names the library cache), a shell or the report: a device is not trusted."""
        abi = adb.getprop("ro.product.cpu.abi")
        sdk = adb.getprop("ro.build.version.sdk")
        if not abi or not (sdk.isascii() and sdk.isdigit() and len(sdk) <= 4):
            raise EnvironmentProblem(f"adb: {adb.device} reports no ABI or API level (getprop failed)")
        if abi not in TRIPLES:
            raise EnvironmentProblem(
                f"adb: {adb.device} reports ABI {abi[:40]!r}, not one of {', '.join(TRIPLES)}"
            )
        model = _MODEL_CHARS.sub("_", adb.getprop("ro.product.model"))[:MODEL_MAX] or "unknown model"
        return cls(abi, int(sdk), model, adb.getprop("ro.kernel.qemu") == "1")

    @property
    def platform(self) -> str:
        return f"android-{self.sdk}-{self.abi}" + (" (emulator)" if self.emulator else f" ({self.model})")

    @property
    def scope(self) -> str:
        return EMULATOR_SCOPE if self.emulator else DEVICE_SCOPE.format(abi=self.abi, model=self.model)


def aar_path(release: str, how: Provisioning) -> Path:
    """The AAR of ``release``: $ONNX_GATE_ANDROID_AAR, else Maven Central's, downloaded once."""
    explicit = how.environ.get(AAR_ENV, "")
    if explicit:
        if not Path(explicit).is_file():
            raise EnvironmentProblem(f"{AAR_ENV}={explicit}: no such file (the onnxruntime-android .aar)")
        return Path(explicit)
    cached = how.cache_dir / "android" / "aar" / f"onnxruntime-android-{release}.aar"
    if cached.is_file():
        return cached
    cached.parent.mkdir(parents=True, exist_ok=True)
    url = MAVEN_URL.format(v=release)
    part = cached.with_suffix(".part")
    try:
        with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_S) as response, part.open("wb") as fh:
            shutil.copyfileobj(response, fh)
    except urllib.error.HTTPError as exc:
        part.unlink(missing_ok=True)
        if exc.code == 404:
            raise EnvironmentProblem(
                f"android runner: Maven Central has no {PACKAGE}:{release}; pick a released version "
                "(https://central.sonatype.com/artifact/com.microsoft.onnxruntime/onnxruntime-android)"
            ) from None
        raise EnvironmentProblem(f"android runner: {url}: HTTP {exc.code}") from None
    except (urllib.error.URLError, OSError) as exc:
        part.unlink(missing_ok=True)
        raise EnvironmentProblem(
            f"android runner: cannot download {url} ({getattr(exc, 'reason', exc)}); "
            f"or point {AAR_ENV} at the .aar"
        ) from None
    part.replace(cached)
    return cached


def _unpack(aar: Path, abi: str, dest: Path) -> int:
    """headers/ → dest/include, jni/<abi>/libonnxruntime.so → dest/lib; the AAR's minSdkVersion."""
    try:
        with zipfile.ZipFile(aar) as z:
            names = z.namelist()
            lib = f"jni/{abi}/libonnxruntime.so"
            if lib not in names:
                abis = sorted({n.split("/")[1] for n in names if n.startswith("jni/") and n.count("/") == 2})
                raise EnvironmentProblem(f"{aar}: no {lib}; the AAR carries {', '.join(abis) or 'no ABI'}")
            (dest / "include").mkdir(parents=True)
            (dest / "lib").mkdir()
            for name in names:
                if name.startswith("headers/") and name.endswith(".h"):
                    (dest / "include" / Path(name).name).write_bytes(z.read(name))
            (dest / "lib" / "libonnxruntime.so").write_bytes(z.read(lib))
            manifest = (
                z.read("AndroidManifest.xml").decode(errors="replace")
                if "AndroidManifest.xml" in names
                else ""
            )
    except (zipfile.BadZipFile, OSError, KeyError) as exc:
        raise EnvironmentProblem(f"{aar}: not a readable .aar ({exc})") from None
    marker = 'minSdkVersion="'
    at = manifest.find(marker)
    digits = manifest[at + len(marker) :].split('"', 1)[0] if at >= 0 else ""
    return int(digits) if digits.isdigit() else NDK_API


def library_release(lib: Path, release: str) -> bool:
    """Whether ``lib`` is onnxruntime ``release``: its symbols carry the version tag VERS_<release>."""
    tag = f"VERS_{release}\0".encode()
    with lib.open("rb") as fh:
        tail = b""
        while chunk := fh.read(1 << 22):
            if tag in tail + chunk:
                return True
            tail = chunk[-len(tag) :]
    return False


def compiler(abi: str, environ: Mapping[str, str]) -> str:
    """$ONNX_GATE_ANDROID_CC, else the NDK's clang for ``abi`` at API level NDK_API."""
    override = environ.get(CC_ENV, "")
    if override:
        found = shutil.which(override, path=environ.get("PATH"))
        if found is None:
            raise EnvironmentProblem(f"{CC_ENV}={override}: no such compiler")
        return found
    triple = TRIPLES.get(abi)
    if triple is None:
        raise EnvironmentProblem(
            f"android runner: no NDK target for ABI {abi!r}; known: {', '.join(TRIPLES)}"
        )
    for name in NDK_ENVS:
        ndk = environ.get(name, "")
        if ndk:
            clang = Path(ndk) / "toolchains/llvm/prebuilt/linux-x86_64/bin" / f"{triple}{NDK_API}-clang"
            if clang.is_file():
                return str(clang)
            raise EnvironmentProblem(
                f"{name}={ndk}: no {clang.name} under toolchains/llvm/prebuilt/linux-x86_64/bin"
            )
    raise EnvironmentProblem(
        "the android runner builds its observer with the Android NDK: set ANDROID_NDK_LATEST_HOME (GitHub's "
        f"Ubuntu images do) or ANDROID_NDK_HOME to an NDK, or {CC_ENV} to a compiler"
    )


class AndroidRunner:
    kind = KIND

    def provision(self, release: str, provider: str, how: Provisioning) -> RunnerEnv:
        adb = Adb.from_environ(how.environ)
        adb.check_device()
        device = Device.probe(adb)
        host_lib = how.environ.get(LIB_ENV, "")
        flavour = f"{device.abi}-host" if host_lib else device.abi
        path = how.cache_dir / "android" / f"ort{release}-{flavour}"
        marker = path / READY
        path.parent.mkdir(parents=True, exist_ok=True)
        with envs._locked(path.parent / f"{path.name}.lock"):
            if not marker.is_file():
                if path.exists():
                    shutil.rmtree(path)  # a half-finished unpack from an interrupted run
                path.mkdir()
                min_sdk = _unpack(aar_path(release, how), device.abi, path)
                lib = path / "lib" / "libonnxruntime.so"
                if host_lib:
                    if not Path(host_lib).is_file():
                        raise EnvironmentProblem(f"{LIB_ENV}={host_lib}: no such library")
                    shutil.copyfile(host_lib, lib)
                if not library_release(lib, release):
                    what = host_lib or f"the AAR's jni/{device.abi}/libonnxruntime.so"
                    shutil.rmtree(path)
                    raise EnvironmentProblem(
                        f"android runner: {what} is not onnxruntime {release} (no VERS_{release})"
                    )
                marker.write_text(json.dumps({"package": f"{PACKAGE}:{release}", "min_sdk": min_sdk}) + "\n")
        min_sdk = int(json.loads(marker.read_text())["min_sdk"])
        if device.sdk < min_sdk:
            raise EnvironmentProblem(
                f"adb: {adb.device} runs API {device.sdk}; onnxruntime-android {release} needs API "
                f"{min_sdk} or newer"
            )
        program = _native().build(
            path / "build",
            cc=compiler(device.abi, how.environ),
            include_dir=path / "include",
            environ=how.environ,
        )
        return RunnerEnv(KIND, release, path, str(program), PACKAGE)

    def launch(self, env: RunnerEnv, x: Launch, *, base_env: Mapping[str, str]) -> proc.Completed:
        target, out_dir = x.target, x.out_dir
        from ci_onnx.observer.feeds import served_sizes

        adb = Adb.from_environ(base_env)
        device = Device.probe(adb)
        remote = f"{DEVICE_ROOT}/{target.id}"
        (out_dir / DEVICE_FILE).write_text(json.dumps(dataclasses.asdict(device)))
        if target.api_level and device.sdk != target.api_level:
            return _failed(
                adb,
                f"the cell is Android API {target.api_level}, {adb.device} runs API {device.sdk}: boot an "
                f"emulator at API {target.api_level}, or plan for targets.android.api_level: {device.sdk}",
            )
        sizes = served_sizes(x.bundle)
        lib = env.path / "lib" / "libonnxruntime.so"
        steps = [
            lambda: adb.shell(["rm", "-rf", remote], timeout=DEVICE_TIMEOUT_S, what="adb shell rm"),
            lambda: adb.shell(
                ["mkdir", "-p", f"{remote}/out"], timeout=DEVICE_TIMEOUT_S, what="adb shell mkdir"
            ),
            lambda: adb.push(Path(env.program), f"{remote}/observe"),
            lambda: adb.push(lib, f"{remote}/libonnxruntime.so"),
            lambda: adb.push(x.bundle.resolve(), f"{remote}/bundle"),
            lambda: adb.shell(
                ["chmod", "755", f"{remote}/observe"], timeout=DEVICE_TIMEOUT_S, what="adb shell chmod"
            ),
        ]
        for step in steps:
            done = step()
            if not done.ok:
                return done
        argv = _native().observer_argv(
            f"{remote}/observe",
            lib=f"{remote}/libonnxruntime.so",
            bundle=f"{remote}/bundle",
            out=f"{remote}/out",
            target=target,
            options=x.options,
            batch_sizes=sizes,
        )
        done = adb.shell(argv, timeout=x.options.timeout_s, what=f"{target.id} runner (adb shell)")
        pulled = _pull(adb, f"{remote}/out", out_dir)
        adb.shell(["rm", "-rf", remote], timeout=DEVICE_TIMEOUT_S, what="adb shell rm")
        return done if not done.ok or pulled.ok else pulled

    def collect(self, out_dir: Path) -> Observation:
        """The native kind's observation, with the device it ran on and what such a cell proves."""
        obs = _native().RUNNER.collect(out_dir)
        facts = out_dir / DEVICE_FILE
        if not facts.is_file():
            return obs
        device = Device(**json.loads(facts.read_text()))
        env = obs.environment
        if env is not None:
            env = dataclasses.replace(env, platform=device.platform)
        notes = (*obs.notes, device.scope) if device.scope not in obs.notes else obs.notes
        obs = dataclasses.replace(obs, environment=env, notes=notes)
        (out_dir / OBSERVATION).write_text(serde.dumps(obs))
        return obs


def _failed(adb: Adb, why: str) -> proc.Completed:
    return proc.Completed(tuple(adb.argv("shell")), 1, "", why, 0.0)


def _pull(adb: Adb, remote: str, out_dir: Path) -> proc.Completed:
    """``adb pull`` the remote out directory into ``out_dir`` (adb nests it in an existing one)."""
    with tempfile.TemporaryDirectory(dir=out_dir) as staging:
        done = adb.pull(remote, Path(staging) / "out")
        if done.ok:
            for item in (Path(staging) / "out").iterdir():
                os.replace(item, out_dir / item.name)
    return done


RUNNER = AndroidRunner()
