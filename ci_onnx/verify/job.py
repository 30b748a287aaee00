"""Verify several targets in one command: what one CI verify job does with its matrix entry.

The targets are grouped by environment (ci_onnx.runners.batch): each environment is provisioned
once (or, for the python kind, is the given interpreter, where the action installed the release),
and its targets are observed by as few runner processes as ``jobs`` allows, each process serving a
share of them (stage.verify_many: a crash or a hang is its own target's error, the rest still run).
A target that cannot be verified at all (its environment cannot be made, its bundle is missing) gets
an error result naming why, written like every other, so the report never has to guess.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from ci_onnx import matrix
from ci_onnx.runners import base
from ci_onnx.runners.batch import environment_key, groups
from ci_onnx.target import Target
from ci_onnx.verify import stage
from ci_onnx.verify_options import VerifyOptions

Found = stage.Written | Exception


def verify_all(
    items: Sequence[tuple[Path, Target]],
    out_dir: Path,
    options: VerifyOptions,
    *,
    how: base.Provisioning,
    python: str | None = None,
    jobs: int = 1,
    record_errors: bool = True,
    on_found: Callable[[Target, Found], None] | None = None,
    run_config: str | None = None,
) -> dict[str, Found]:
    """Verify every (bundle, target) of ``items``; target id → what was written, or the exception that
    stopped it (with ``record_errors``, its error result is written too). ``python`` serves the
    targets of a kind that runs in a Python interpreter (the interpreter whose onnxruntime they run
    on, as CI's action installs it); without it, this interpreter where it holds a target's release,
    else the target's cached environment, as other kinds are provisioned with ``how``.
    ``run_config``: how the results say to reproduce a target (stage.reproduce_command)."""
    bundles = {t.id: bundle for bundle, t in items}
    found: dict[str, Found] = {}
    lock = threading.Lock()

    def settle(target: Target, value: Found) -> None:
        if isinstance(value, Exception) and record_errors:
            reproduce = stage.reproduce_command(target, bundles[target.id], run_config)
            with contextlib.suppress(OSError):  # the exception is still returned: the caller says it
                stage.write_error(target, out_dir, stage.describe_error(value), reproduce)
        with lock:
            found[target.id] = value
        if on_found is not None:
            on_found(target, value)

    environments: dict[tuple[str, str, str], base.RunnerEnv | Exception] = {}
    for t in (t for _, t in items):
        key = environment_key(t)
        if key not in environments:
            environments[key] = _environment(t, how, python)

    def one_group(members: Sequence[Target]) -> None:
        env = environments[environment_key(members[0])]
        if isinstance(env, Exception):
            for t in members:
                settle(t, env)
            return
        try:
            stage.verify_many(
                [(bundles[t.id], t) for t in members],
                out_dir,
                options,
                base_env=how.environ,
                environment=env,
                on_written=lambda i, value: settle(members[i], value),
                run_config=run_config,
            )
        except Exception as exc:  # a runner that cannot start: its targets' errors, never the others'
            for t in members:
                if t.id not in found:
                    settle(t, exc)

    grouped = groups([t for _, t in items], jobs)
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for future in [pool.submit(one_group, g) for g in grouped]:
            future.result()
    return {t.id: found[t.id] for _, t in items}


def _environment(target: Target, how: base.Provisioning, python: str | None) -> base.RunnerEnv | Exception:
    try:
        if matrix.runners()[target.runner].can.interpreter:
            from ci_onnx.runners.python import from_interpreter, holds

            stage.provider_of(target)  # an unknown provider is a usage error before anything runs
            if python is None and holds(sys.executable, target, how.environ):
                python = sys.executable  # this interpreter holds the release: verify in it
            if python is not None:
                return from_interpreter(python)
        return base.provision(target, how)
    except Exception as exc:  # its targets' error results say it
        return exc


def bundle_for(root: Path, key: str) -> Path:
    """Where the bundle ``key`` lies under ``root``: ``root/KEY`` as ``onnx-gate export --out``
    writes it, or ``root/onnx-gate-bundle-KEY`` as download-artifact lays out several artifacts."""
    from ci_onnx.cijobs import BUNDLE_ARTIFACT

    plain = root / key
    return plain if plain.is_dir() else root / (BUNDLE_ARTIFACT + key)
