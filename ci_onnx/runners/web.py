"""The web runner kind: onnxruntime-web from npm, observed in headless Chromium.

One npm install per release under the cache directory: ``onnxruntime-web@X`` beside
``playwright-core@PLAYWRIGHT_CORE`` (pinned here, and only here), which drives the browser; never a
browser of its own: the executable is ``$ONNX_GATE_CHROMIUM``, else the first of Google Chrome (on
GitHub's ubuntu images) and Debian's ``chromium`` (scripts/setup-web installs it) that
:func:`chromium` finds. ``web/drive.mjs`` serves ``web/page.html`` from a local HTTP server that
sends COOP/COEP (without them ``crossOriginIsolated`` is false and wasm threads silently drop to
one), the page reads the bundle with the node runner's TensorProto codec, runs the cell's EP and posts
back the same observation.json and output files as every runner; the console holds the verbose log,
whose "Node placements" lines :meth:`WebRunner.collect` turns into a Placement.

Providers (providers.toml): ``wasm`` (one thread), ``wasmmt`` (``WASM_THREADS["wasmmt"]`` threads) and
``webgpu`` (on SwiftShader where there is no GPU). The browser of a cell has a fresh profile, and is
killed with its process group after the cell, whatever became of the driver (playwright starts
Chromium as the leader of a group of its own, so the driver's timeout does not reach it).

:meth:`WebRunner.launch_many` (what ``onnx-gate run`` uses for the web cells of one release) keeps
one driver, one server and one browser for all of them, a fresh browser context and page per cell,
one browser per flag set (:func:`flag_set`: WebGPU's SwiftShader flags, or wasm's ``--disable-gpu``).
A cell that hangs is its own timeout: the driver is killed, its browser swept at once, and the cells
after it go on in a fresh driver and browser (ci_onnx.runners.batch).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from ci_onnx import matrix
from ci_onnx.contracts import proc
from ci_onnx.contracts.errors import EnvironmentProblem
from ci_onnx.contracts.results import Observation
from ci_onnx.observer.feeds import served_sizes
from ci_onnx.runners import batch, npm
from ci_onnx.runners.base import Launch, PlacementSources, Provisioning, RunnerEnv, collect

KIND = "web"
DRIVER = Path(__file__).parent / "web" / "drive.mjs"
PLAYWRIGHT_CORE = "1.65.1"
"""The playwright-core release that drives the browser (it ships no browser; only its protocol)."""
WASM_THREADS = {"wasm": 1, "wasmmt": 2, "webgpu": 1}
"""ort.env.wasm.numThreads per provider: the cell option, readable in the id as its provider."""
CHROMIUM_ENV = "ONNX_GATE_CHROMIUM"
CHROMIUM_NAMES = ("google-chrome", "google-chrome-stable", "chromium", "chromium-browser")
"""The browsers looked for, in order, where ``$ONNX_GATE_CHROMIUM`` is unset: on PATH, else in
:data:`CHROMIUM_DIR` (GitHub's ubuntu images have Google Chrome; Debian's package is chromium)."""
CHROMIUM_DIR = Path("/usr/bin")
PLACEMENT = PlacementSources(
    verbose_log="verbose.log", none_found="the browser's console held no node placements"
)
TIMINGS = "web_timings.json"
"""The page's phases in ms, and ``runs``: every session.run as [phase, rows, ms] (bench/bench_web.py)."""
RUNS_BEGIN = "onnx-gate: the observed session is created; its runs follow"
"""The console line page.mjs logs before its first run: what the verbose log holds after it is the runs'."""
SWEEP_WAIT_S = 5.0


def chromium(environ: Mapping[str, str], usual: Path = CHROMIUM_DIR) -> str:
    """The browser to drive: ``$ONNX_GATE_CHROMIUM``, else the first of :data:`CHROMIUM_NAMES` on
    PATH or in ``usual``, found when the cell runs (the CI job names no path)."""
    given = environ.get(CHROMIUM_ENV, "")
    if given:
        if not _executable(Path(given)):
            raise EnvironmentProblem(
                f"{CHROMIUM_ENV}={given}: no executable there; point it at a Chromium or Chrome"
            )
        return given
    for name in CHROMIUM_NAMES:
        found = shutil.which(name, path=environ.get("PATH", ""))
        if found:
            return found
    for name in CHROMIUM_NAMES:
        if _executable(usual / name):
            return str(usual / name)
    raise EnvironmentProblem(
        f"the web runner found no browser ({', '.join(CHROMIUM_NAMES)} on PATH or in {usual}): run "
        f"scripts/setup-web (apt-get install chromium), or set {CHROMIUM_ENV} to a Chromium or Chrome"
    )


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _tool(name: str, environ: Mapping[str, str]) -> str:
    found = shutil.which(name, path=environ.get("PATH"))
    if found is None:
        raise EnvironmentProblem(
            f"the web runner needs `{name}` on PATH; install Node.js 20 or newer (actions/setup-node in CI)"
        )
    return found


def install_dir(cache_dir: Path, package: str, release: str) -> Path:
    return cache_dir / "npm" / f"{package}-{release}-playwright-core-{PLAYWRIGHT_CORE}"


def argv(env: RunnerEnv, browser: str, profile: Path, x: Launch) -> list[str]:
    """The driver's command line for one cell."""
    provider = x.target.provider
    return [
        env.program, str(DRIVER),
        "--modules", str(env.path),
        "--chromium", browser,
        "--profile", str(profile),
        "--bundle", str(x.bundle.resolve()),
        "--target-id", x.target.id,
        "--ep", "wasm" if provider.startswith("wasm") else provider,
        "--ep-name", x.ep,
        "--threads", str(WASM_THREADS[provider]),
        "--out", str(x.out_dir.resolve()),
        "--latency-runs", str(x.options.latency_runs),
        "--batch-sizes", ",".join(str(n) for n in served_sizes(x.bundle)),
    ]  # fmt: skip


def flag_set(provider: str) -> str:
    """Which of the driver's browser flag sets a provider needs (drive.mjs ``flags``): a browser serves
    the cells of one flag set."""
    return "webgpu" if provider == "webgpu" else "wasm"


def browser_pids(profile: Path, proc_dir: Path = Path("/proc")) -> list[int]:
    """The processes started with ``--user-data-dir=profile`` or a profile inside it (playwright's
    temporary one, for a batch): the browser of one cell, or of one batch."""
    mark = f"--user-data-dir={profile}".encode()
    inside = mark + b"/"
    pids = []
    for entry in proc_dir.iterdir() if proc_dir.is_dir() else ():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(a == mark or a.startswith(inside) for a in args):
            pids.append(int(entry.name))
    return pids


def sweep(profile: Path) -> int:
    """Kill the browser of ``profile`` with its process groups; how many processes were left."""
    pids = browser_pids(profile)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(os.getpgid(pid), signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + SWEEP_WAIT_S
    while pids and browser_pids(profile) and time.monotonic() < deadline:
        time.sleep(0.05)
    return len(pids)


@contextlib.contextmanager
def fresh_profile() -> Iterator[Path]:
    """A new, empty ``--user-data-dir``; its browser is swept and the folder removed on exit."""
    profile = Path(tempfile.mkdtemp(prefix="onnx-gate-chromium-"))
    try:
        with proc.cleanup(lambda: sweep(profile)):  # the browser leaves the driver's group
            yield profile
    finally:
        sweep(profile)
        shutil.rmtree(profile, ignore_errors=True)


class WebRunner:
    kind = KIND

    def provision(self, release: str, provider: str, how: Provisioning) -> RunnerEnv:
        package = matrix.runners()[KIND].package_for(provider)
        chromium(how.environ)  # a missing browser is a one-line error now, not one per cell later
        node = _tool("node", how.environ)
        path = install_dir(how.cache_dir, package, release)
        env = RunnerEnv(KIND, release, path, node, package)
        if not (path / npm.READY).is_file():
            npm.install(
                path, package, release, npm=_tool("npm", how.environ), environ=how.environ,
                what=f"web runner: {package}@{release}", extra=[f"playwright-core@{PLAYWRIGHT_CORE}"],
            )  # fmt: skip
        return env

    def launch(self, env: RunnerEnv, x: Launch, *, base_env: Mapping[str, str]) -> proc.Completed:
        browser = chromium(base_env)
        with fresh_profile() as profile:
            args = argv(env, browser, profile, x)
            return proc.run(args, timeout=x.options.timeout_s, env=base_env, what=f"{x.target.id} runner")

    def launch_many(
        self,
        env: RunnerEnv,
        launches: Sequence[Launch],
        *,
        base_env: Mapping[str, str],
        on_done: Callable[[int, proc.Completed], None] | None = None,
    ) -> list[proc.Completed]:
        """Every launch in one driver and one browser per flag set, each cell's out dir and Completed
        as its own :meth:`launch` would give them; a hung cell's browser is swept before the next starts."""
        browser = chromium(base_env)
        by_flags: dict[str, list[int]] = {}
        for i, x in enumerate(launches):
            by_flags.setdefault(flag_set(x.target.provider), []).append(i)
        results: dict[int, proc.Completed] = {}
        for members in by_flags.values():
            with fresh_profile() as root:
                jobs = [
                    batch.Job(
                        tuple(argv(env, browser, root, x)[2:]), x.options.timeout_s, f"{x.target.id} runner"
                    )
                    for x in (launches[i] for i in members)
                ]

                def settle(
                    j: int, done: proc.Completed, members: list[int] = members, root: Path = root
                ) -> None:
                    if done.timed_out:
                        sweep(root)  # the hung cell's browser, before a fresh one starts the rest
                    results[members[j]] = done
                    if on_done is not None:
                        on_done(members[j], done)

                batch.run_jobs(
                    (env.program, str(DRIVER), "--profile-root", str(root)),
                    jobs,
                    workdir=root,
                    env=base_env,
                    on_done=settle,
                    what=f"{env.package} {env.release} web runner",
                )
        return [results[i] for i in range(len(launches))]

    def collect(self, out_dir: Path) -> Observation:
        """The observation, with the placement learnt from the console's verbose log."""
        return collect(KIND, out_dir, PLACEMENT)


RUNNER = WebRunner()
