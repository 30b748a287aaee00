"""A runner kind written the way a new one is (ARCHITECTURE.md, "A new runner kind"), for the test
that shows a kind is one module, one observer program and one row of the runner table. Its observer
is tests/support/standin_observer.py, which reports the bundle's references as what it observed:
the transport is real, the numerics are not."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

from ci_onnx.contracts import proc
from ci_onnx.contracts.results import Observation
from ci_onnx.runners.base import Launch, Provisioning, RunnerEnv, collect

KIND = "echo"
OBSERVER = Path(__file__).with_name("standin_observer.py")


class EchoRunner:
    kind = KIND

    def provision(self, release: str, provider: str, how: Provisioning) -> RunnerEnv:
        lib = how.cache_dir / KIND / f"libonnxruntime-{release}.so"  # what the observer says it loaded
        lib.parent.mkdir(parents=True, exist_ok=True)
        lib.write_bytes(f"VERS_{release}\0".encode())
        return RunnerEnv(KIND, release, lib, sys.executable, KIND)

    def launch(self, env: RunnerEnv, x: Launch, *, base_env: Mapping[str, str]) -> proc.Completed:
        argv = [
            env.program, str(OBSERVER),
            "--lib", str(env.path),
            "--bundle", str(x.bundle.resolve()),
            "--target-id", x.target.id,
            "--ep", x.target.provider,
            "--out", str(x.out_dir.resolve()),
        ]  # fmt: skip
        x.out_dir.mkdir(parents=True, exist_ok=True)
        return proc.run(
            argv, timeout=x.options.timeout_s, cwd=x.out_dir, env=base_env, what=f"{x.target.id} runner"
        )

    def collect(self, out_dir: Path) -> Observation:
        return collect(KIND, out_dir)


RUNNER = EchoRunner()
