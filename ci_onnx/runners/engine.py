"""The host's side of a runner kind that runs another engine than onnxruntime (openvino, tract).

Such a kind's release is its engine's (runners.toml ``releases``, resolved on PyPI at plan time); its
environment holds that engine and numpy (ci_onnx.host.envs, one cached environment per release), and its
observer is a module of ci_onnx.observer run with the environment's interpreter, the ci_onnx package
linked in as the python kind links it. Each kind's module is an :class:`EngineRunner` with its
observer and the arguments its presets give the observer.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from pathlib import Path

from ci_onnx import matrix
from ci_onnx.contracts import proc, serde
from ci_onnx.contracts.results import Observation
from ci_onnx.runners.base import Launch, Provisioning, RunnerEnv, collect
from ci_onnx.runners.python import package_path


@dataclasses.dataclass(frozen=True)
class EngineRunner:
    kind: str
    observer: str
    """The observer's module (``python -m``)."""
    options_arg: str = ""
    """The observer's argument that takes the cell's preset as JSON; empty: the kind has no presets."""

    def provision(self, release: str, provider: str, how: Provisioning) -> RunnerEnv:
        from ci_onnx.host import envs

        package = matrix.runners()[self.kind].package_for(provider)
        env = envs.ensure(
            package, release, how.cache_dir, uv=how.uv, environ=how.environ, numpy_spec="",
            what=f"{self.kind} runner: {package}=={release}",
        )  # fmt: skip
        return RunnerEnv(self.kind, release, env.path, str(env.python), package)

    def argv(self, env: RunnerEnv, x: Launch) -> list[str]:
        args = [
            env.program, "-m", self.observer,
            "--bundle", str(x.bundle.resolve()),
            "--target-json", json.dumps(serde.to_json(x.target)),
            "--ep", x.ep,
            "--out", str(x.out_dir.resolve()),
            "--latency-runs", str(x.options.latency_runs),
        ]  # fmt: skip
        if self.options_arg:
            chosen = preset(self.kind, x.target.session_options, x.options.engine_presets)
            args += [self.options_arg, json.dumps(chosen)]
        if not x.options.serving_figures:  # verify.serving_figures: false; the check says why it is skipped
            args.append("--no-cold-start")
        return args

    def launch(self, env: RunnerEnv, x: Launch, *, base_env: Mapping[str, str]) -> proc.Completed:
        with package_path() as path:
            env_vars = {**base_env, "PYTHONPATH": path, "PYTHONDONTWRITEBYTECODE": "1"}
            done = proc.run(
                self.argv(env, x), timeout=x.options.timeout_s, env=env_vars, what=f"{x.target.id} runner"
            )
        why = "" if done.ok else panic(done.stderr)
        return dataclasses.replace(done, stderr=f"{done.stderr.rstrip()}\n{why}\n") if why else done

    def collect(self, out_dir: Path) -> Observation:
        return collect(self.kind, out_dir)  # the observer writes its placement, or says why not


PANIC = re.compile(r"^thread '[^']*'(?: \(\d+\))? panicked at (?P<where>\S+?):?\n(?P<what>[^\n]*)", re.M)


def panic(stderr: str) -> str:
    """The engine's own words where a Rust engine (tract) panicked: the first panic's place and message.

    An abort after a panic ends stderr with "thread caused non-unwinding panic. aborting.", the last
    line the runner check would otherwise quote; '' when stderr holds no panic."""
    m = PANIC.search(stderr)
    return f"panicked at {m['where']}: {m['what'].strip()}" if m else ""


def preset(kind: str, name: str, user: dict[str, dict[str, dict[str, str]]] | None = None) -> dict[str, str]:
    """The engine properties of ``kind``'s preset ``name`` (runners.toml ``presets``, and the config's
    ``targets.engine_presets``: ``user``); an unknown name is a ValueError naming the known ones."""
    presets = matrix.runners()[kind].presets_with(user)
    if name not in presets:
        raise ValueError(f"the {kind} runner has no preset {name!r}; its presets: {', '.join(presets)}")
    return {k: str(v) for k, v in presets[name].items()}
