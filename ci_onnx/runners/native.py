"""The native runner kind: libonnxruntime through ONNX Runtime's C API, observed by a small C program.

The view of a C or C++ serving application. ``native/observe.c`` (C11, with its own TensorProto
codec in ``native/tensorproto.c``) ships in the package as source and is compiled here with the
host's C compiler, against the C headers of one package (nothing fetched is committed), once per
source hash. It dlopens the release's libonnxruntime instead of linking to it, and asks for the
lowest C API version that has every function it calls, so one build observes any release from
1.12 on (a binary linked against one release fails on another with "version 'VERS_1.30.0' not
found").

Where the parts come from (npm, installed into the cache like the node runner's packages):

- the C headers, and 1.29.0's Linux x64 library: ``com.github.asus4.onnxruntime`` 0.4.9, a Unity
  package that ships ONNX Runtime 1.29.0 for every platform (its iOS framework carries the headers;
  its Plugins/Android/onnxruntime.aar is the official onnxruntime-android AAR);
- every other release's library: ``onnxruntime-node`` of that release, which ships its own
  ``libonnxruntime.so.1`` beside the Node binding (the same install the node runner uses).

Linux here. macOS would take ``libonnxruntime.dylib`` (the Unity package's Plugins/macOS/arm64, or
onnxruntime-node's bin/napi-v*/darwin) and read peak memory from getrusage; Windows would build
observe.c with LoadLibrary/GetProcAddress in place of dlopen/dlsym against ``onnxruntime.dll``.
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from ci_onnx import matrix
from ci_onnx.contracts import proc
from ci_onnx.contracts.errors import EnvironmentProblem
from ci_onnx.contracts.results import Observation
from ci_onnx.contracts.target import Target
from ci_onnx.contracts.verify_options import VerifyOptions
from ci_onnx.runners.base import Launch, PlacementSources, Provisioning, RunnerEnv, collect

KIND = "native"
SOURCES = Path(__file__).parent / "native"
PLACEMENT = PlacementSources("native_profile.json", "verbose.log")
API_VERSION = 12
"""The ORT C API version observe.c asks for (OBSERVE_API_VERSION there): releases 1.12 and newer."""
HEADERS_PACKAGE, HEADERS_VERSION = "com.github.asus4.onnxruntime", "0.4.9"
HEADERS_RELEASE = "1.29.0"
"""The ONNX Runtime release the headers package ships (and whose Linux library it carries)."""
HEADERS_DIR = "Plugins/iOS~/onnxruntime.xcframework/ios-arm64/onnxruntime.framework/Headers"
LIB_PACKAGE = "onnxruntime-node"
BUILD_FLAGS = ("-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-pthread")
LINK_FLAGS = ("-ldl",)
BUILD_TIMEOUT_S = 300.0
"""The marker of a finished install, the same as the node runner's (they share onnxruntime-node's)."""
_ARCH = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}


def _tool(names: Sequence[str], environ: Mapping[str, str], why: str) -> str:
    for name in names:
        found = shutil.which(name, path=environ.get("PATH"))
        if found:
            return found
    raise EnvironmentProblem(why)


def compiler(environ: Mapping[str, str]) -> str:
    """$CC, else cc, gcc or clang on PATH."""
    if environ.get("CC"):
        return _tool([environ["CC"]], environ, f"the native runner's CC={environ['CC']} is not on PATH")
    return _tool(
        ["cc", "gcc", "clang"],
        environ,
        "the native runner needs a C compiler (cc, gcc or clang on PATH, or CC); on Debian/Ubuntu "
        "`apt-get install gcc`",
    )


def _sources() -> list[Path]:
    return sorted([*SOURCES.glob("*.c"), *SOURCES.glob("*.h")])


def build(
    out_dir: Path,
    *,
    cc: str,
    include_dir: Path,
    flags: Sequence[str] = (),
    environ: Mapping[str, str],
) -> Path:
    """The observer compiled with ``cc`` against the C headers in ``include_dir``, cached by a hash of
    the sources, the compiler, the flags and the header; EnvironmentProblem with the compiler's
    first error when it does not build. ``flags`` add to -std=c11 -O2 -Wall -Wextra -Werror (a
    cross compiler's --target, -static...)."""
    header = include_dir / "onnxruntime_c_api.h"
    if not header.is_file():
        raise EnvironmentProblem(f"native runner: {include_dir} holds no onnxruntime_c_api.h")
    digest = hashlib.sha256()
    for part in [*(p.read_bytes() for p in _sources()), cc.encode(), "\0".join(flags).encode()]:
        digest.update(hashlib.sha256(part).digest())
    digest.update(hashlib.sha256(header.read_bytes()).digest())
    program = out_dir / f"observe-{digest.hexdigest()[:16]}"
    if program.is_file():
        return program
    out_dir.mkdir(parents=True, exist_ok=True)
    sources = [str(p) for p in _sources() if p.suffix == ".c"]
    with tempfile.TemporaryDirectory(dir=out_dir, prefix=".build-") as tmp:
        built = Path(tmp) / "observe"
        argv = [
            cc, *BUILD_FLAGS, *flags, "-I", str(include_dir), *sources, "-o", str(built), *LINK_FLAGS
        ]  # fmt: skip
        done = proc.run(
            argv, timeout=BUILD_TIMEOUT_S, env=dict(environ), what="native runner: compiling observe.c"
        )
        if not done.ok or not built.is_file():
            first = (
                next((ln for ln in done.stderr.splitlines() if "error" in ln), "") or done.describe_failure()
            )
            raise EnvironmentProblem(
                f"native runner: observe.c does not build with {cc}: {first.strip()[:400]}"
            )
        os.replace(built, program)
    return program


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
    """The observer's command line (the android kind runs the same one over adb). The provider's
    names come from providers.toml: the one onnxruntime registers, and the one the C API appends
    it by (none for cpu, or where the C API has none); the observer keeps no table of its own."""
    provider = matrix.providers()[target.provider]
    argv = [
        program,
        "--lib", lib,
        "--bundle", bundle,
        "--target-id", target.id,
        "--ep", target.provider,
        "--ep-name", provider.ep,
        *(["--ep-append", provider.c_api] if provider.c_api else []),
        "--out", out,
        "--latency-runs", str(options.latency_runs),
        "--batch-sizes", ",".join(str(n) for n in sorted(batch_sizes)),
    ]  # fmt: skip
    if options.strict_fallback:
        argv.append("--strict-fallback")
    return argv


def npm_package(package: str, version: str, how: Provisioning) -> Path:
    """``package@version`` installed under the cache (``npm/<package>-<version>``, the node runner's
    layout, so its onnxruntime-node installs are shared); the package's directory."""
    from ci_onnx.runners import npm
    from ci_onnx.runners.node import SKIP_POSTINSTALL

    path = how.cache_dir / "npm" / f"{package}-{version}"
    if (path / npm.READY).is_file():
        return path / "node_modules" / package
    tool = _tool(
        ["npm"], how.environ, "the native runner installs its parts with `npm`; install Node.js and npm"
    )
    what = f"native runner: {package}@{version}"
    try:
        return npm.install(
            path, package, version, npm=tool, environ={**how.environ, **SKIP_POSTINSTALL}, what=what
        )
    except npm.NoSuchRelease:
        raise LookupError(f"{package}@{version}") from None


def headers(how: Provisioning) -> Path:
    """The ONNX Runtime C headers, from the installed Unity package."""
    try:
        module = npm_package(HEADERS_PACKAGE, HEADERS_VERSION, how)
    except LookupError:
        raise EnvironmentProblem(
            f"native runner: {HEADERS_PACKAGE} {HEADERS_VERSION} (the C headers) is not on the npm registry"
        ) from None
    include = module / HEADERS_DIR
    if not (include / "onnxruntime_c_api.h").is_file():
        raise EnvironmentProblem(f"native runner: {HEADERS_PACKAGE} {HEADERS_VERSION} has no {HEADERS_DIR}")
    return include


def _arch() -> str:
    machine = platform.machine().lower()
    if machine not in _ARCH:
        raise EnvironmentProblem(f"the native runner has no libonnxruntime for the {machine} architecture")
    return _ARCH[machine]


def releases_with_a_library(environ: Mapping[str, str]) -> list[str]:
    """The releases a library comes from: the Unity package's, and onnxruntime-node's from 1.12 on."""
    from ci_onnx.host.resolve import _ask_npm, _is_final

    try:
        found = [v for v in _ask_npm(LIB_PACKAGE, environ) if _is_final(v)]
    except EnvironmentProblem:
        found = []
    keep = {v for v in found if matrix.version_key(v) >= matrix.version_key(f"1.{API_VERSION}")}
    return sorted(keep | {HEADERS_RELEASE}, key=matrix.version_key)


def library(release: str, how: Provisioning) -> Path:
    """The libonnxruntime of ``release`` for this machine; EnvironmentProblem in one line if none."""
    if not sys.platform.startswith("linux"):
        raise EnvironmentProblem(
            f"the native runner runs on Linux here, not {sys.platform}; macOS and Windows are designed "
            "(see the docs' runners guide, native runner), not built"
        )
    arch = _arch()
    if matrix.version_key(release) < matrix.version_key(f"1.{API_VERSION}"):
        raise EnvironmentProblem(
            f"native runner: onnxruntime {release} predates ORT C API {API_VERSION}; the native runner "
            f"observes releases 1.{API_VERSION} and newer"
        )
    if release == HEADERS_RELEASE and arch == "x64":
        lib = headers(how).parents[4] / "Linux" / "x64" / "libonnxruntime.so"
        if lib.is_file():
            return lib
    try:
        module = npm_package(LIB_PACKAGE, release, how)
    except LookupError:
        known = ", ".join(releases_with_a_library(how.environ))
        raise EnvironmentProblem(
            f"native runner: no libonnxruntime for release {release}: {LIB_PACKAGE} has no release "
            f"{release} on the npm registry; releases with a library: {known}"
        ) from None
    found = sorted(module.glob(f"bin/napi-v*/linux/{arch}/libonnxruntime.so.1"))
    if not found:
        raise EnvironmentProblem(
            f"native runner: {LIB_PACKAGE} {release} ships no libonnxruntime.so.1 for linux/{arch}"
        )
    return found[-1]


class NativeRunner:
    kind = KIND

    def provision(self, release: str, provider: str, how: Provisioning) -> RunnerEnv:
        """The release's library (``path``: the runtime is one shared library) and the built observer."""
        lib = library(release, how)
        cc = compiler(how.environ)
        program = build(
            how.cache_dir / "native" / "build", cc=cc, include_dir=headers(how), environ=how.environ
        )
        package = HEADERS_PACKAGE if lib.name == "libonnxruntime.so" else LIB_PACKAGE
        return RunnerEnv(KIND, release, lib, str(program), package)

    def launch(self, env: RunnerEnv, x: Launch, *, base_env: Mapping[str, str]) -> proc.Completed:
        from ci_onnx.observer.feeds import served_sizes

        sizes = served_sizes(x.bundle)
        argv = observer_argv(
            env.program,
            lib=str(env.path),
            bundle=str(x.bundle.resolve()),
            out=str(x.out_dir.resolve()),
            target=x.target,
            options=x.options,
            batch_sizes=sizes,
        )
        return proc.run(argv, timeout=x.options.timeout_s, env=base_env, what=f"{x.target.id} runner")

    def collect(self, out_dir: Path) -> Observation:
        """The observation, with the placement learnt from the profile trace of the parity runs or,
        where it holds no node events, the verbose log of the session created at verbose level."""
        return collect(KIND, out_dir, PLACEMENT)


RUNNER = NativeRunner()
