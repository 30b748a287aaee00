"""The node runner kind: onnxruntime-node from npm, observed by a small JavaScript program.

One npm install per release under the cache directory (``npm install --prefix DIR
onnxruntime-node@X``), with the package's postinstall skipped: it only downloads CUDA binaries, and
the CPU (and WebGPU) binaries ship in the package itself. The observer, ``node/observe.mjs``, ships
in the package with its dependency-free TensorProto codec (no bundler, no build step); it writes the
same observation.json and output files as the Python runner, plus the profile trace of its parity
runs, which :meth:`NodeRunner.collect` turns into a Placement with the code every runner shares.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path

from ci_onnx import matrix
from ci_onnx.contracts import proc
from ci_onnx.contracts.errors import EnvironmentProblem
from ci_onnx.contracts.results import Observation
from ci_onnx.runners import npm
from ci_onnx.runners.base import Launch, PlacementSources, Provisioning, RunnerEnv, collect

KIND = "node"
OBSERVER = Path(__file__).parent / "node" / "observe.mjs"
PLACEMENT = PlacementSources(
    "node_profile.json", "verbose.log", "the profile and the log hold no node placements"
)
SKIP_POSTINSTALL = {"ONNXRUNTIME_NODE_INSTALL": "skip", "ONNXRUNTIME_NODE_INSTALL_CUDA": "skip"}
"""The names releases before and after 1.21 read; ``--ignore-scripts`` makes sure of it."""


def module_dir(env: RunnerEnv) -> Path:
    return env.path / "node_modules" / env.package


def _tool(name: str, environ: Mapping[str, str]) -> str:
    found = shutil.which(name, path=environ.get("PATH"))
    if found is None:
        raise EnvironmentProblem(
            f"the node runner needs `{name}` on PATH; install Node.js 20 or newer (actions/setup-node in CI)"
        )
    return found


SWIFTSHADER_ICD = "vk_swiftshader_icd.json"
CHROMIUM_LIB_DIRS = (Path("/usr/lib/chromium"), Path("/usr/lib64/chromium"), Path("/opt/google/chrome"))


def swiftshader(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment that puts the WebGPU EP on SwiftShader, the Vulkan driver Chromium ships
    (Debian's chromium package, or Chrome): its library directory first on LD_LIBRARY_PATH (it holds
    libvulkan.so.1 too) and its ICD file as the only Vulkan driver. Empty where neither is installed:
    the session then meets whatever Vulkan driver the machine has, or says there is none."""
    for lib in CHROMIUM_LIB_DIRS:
        if (lib / SWIFTSHADER_ICD).is_file():
            paths = [str(lib), *filter(None, environ.get("LD_LIBRARY_PATH", "").split(":"))]
            return {"LD_LIBRARY_PATH": ":".join(paths), "VK_ICD_FILENAMES": str(lib / SWIFTSHADER_ICD)}
    return {}


class NodeRunner:
    kind = KIND

    def provision(self, release: str, provider: str, how: Provisioning) -> RunnerEnv:
        package = matrix.runners()[KIND].package_for(provider)
        node = _tool("node", how.environ)
        path = how.cache_dir / "npm" / f"{package}-{release}"
        env = RunnerEnv(KIND, release, path, node, package)
        if not (path / npm.READY).is_file():
            npm.install(
                path, package, release, npm=_tool("npm", how.environ),
                environ={**how.environ, **SKIP_POSTINSTALL}, what=f"node runner: {package}@{release}",
            )  # fmt: skip
        return env

    def launch(self, env: RunnerEnv, x: Launch, *, base_env: Mapping[str, str]) -> proc.Completed:
        env_ = {**base_env, **swiftshader(base_env)} if x.target.provider == "webgpu" else base_env
        return proc.run(
            observer_argv(env, x), timeout=x.options.timeout_s, env=env_, what=f"{x.target.id} runner"
        )

    def collect(self, out_dir: Path) -> Observation:
        """The observation, with the placement learnt from the profile trace or verbose log it left."""
        return collect(KIND, out_dir, PLACEMENT)


def observer_argv(env: RunnerEnv, x: Launch) -> list[str]:
    """The observer's command line for one target. onnxruntime-node takes a provider by its
    providers.toml key (its backend's name); what onnxruntime registers each under comes from
    providers.toml too (``--ep-names``: the target's, and those of the backends the package lists),
    so the observer keeps no table of its own."""
    from ci_onnx.observer.feeds import served_sizes

    names = ",".join(f"{key}={p.ep}" for key, p in matrix.providers().items())
    return [
        env.program, str(OBSERVER),
        "--module", str(module_dir(env)),
        "--bundle", str(x.bundle.resolve()),
        "--target-id", x.target.id,
        "--ep", x.target.provider,
        "--ep-names", names,
        "--out", str(x.out_dir.resolve()),
        "--latency-runs", str(x.options.latency_runs),
        "--batch-sizes", ",".join(str(n) for n in served_sizes(x.bundle)),
    ]  # fmt: skip


RUNNER = NodeRunner()
