"""The Python runner kind: onnxruntime (and its flavours) from PyPI, in one cached environment each.

Provisioning is ci_onnx.envs (uv or venv + pip); the observer is ``python -m ci_onnx.runners.ort``,
run with the environment's interpreter and a PYTHONPATH that holds only the ci_onnx package (a link
to it in a temporary directory), so the environment needs nothing but numpy and its onnxruntime.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping
from pathlib import Path

import ci_onnx
from ci_onnx import envs, matrix, proc, serde
from ci_onnx.results import Observation
from ci_onnx.runners import session
from ci_onnx.runners.base import Provisioning, RunnerEnv, read_observation
from ci_onnx.target import Target
from ci_onnx.verify.options import VerifyOptions

KIND = "python"


def from_interpreter(python: str) -> RunnerEnv:
    """An environment someone else made: the interpreter given by ``onnx-gate verify --python``."""
    return RunnerEnv(KIND, "", Path(python).parent.parent, python)


class PythonRunner:
    kind = KIND

    def provision(self, release: str, provider: str, how: Provisioning) -> RunnerEnv:
        package = matrix.runners()[KIND].package_for(provider)
        env = envs.ensure(package, release, how.cache_dir, uv=how.uv, environ=how.environ)
        return RunnerEnv(KIND, release, env.path, str(env.python), package)

    def launch(
        self,
        env: RunnerEnv,
        bundle: Path,
        target: Target,
        out_dir: Path,
        options: VerifyOptions,
        *,
        ep: str,
        base_env: Mapping[str, str],
    ) -> proc.Completed:
        argv = [
            env.program, "-m", "ci_onnx.runners.ort",
            "--bundle", str(bundle.resolve()),
            "--target-json", json.dumps(serde.to_json(target)),
            "--ep", ep,
            "--out", str(out_dir.resolve()),
            "--latency-runs", str(options.latency_runs),
        ]  # fmt: skip
        if options.strict_fallback:
            argv.append("--strict-fallback")
        argv += session.runner_args(target.session_options, options.session_presets, env.path)
        with tempfile.TemporaryDirectory(prefix="onnx-gate-runner-") as tmp:
            (Path(tmp) / "ci_onnx").symlink_to(Path(ci_onnx.__file__).parent, target_is_directory=True)
            env_vars = {**base_env, "PYTHONPATH": tmp, "PYTHONDONTWRITEBYTECODE": "1"}
            return proc.run(argv, timeout=options.timeout_s, env=env_vars, what=f"{target.id} runner")

    def collect(self, out_dir: Path) -> Observation:
        return read_observation(out_dir)


RUNNER = PythonRunner()
