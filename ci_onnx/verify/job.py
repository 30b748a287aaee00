"""Verify targets grouped by environment: the one orchestrator that `onnx-gate run`, `onnx-gate verify`
(one CI verify job's matrix entry) and the nightly's search call.

Each group's targets share an environment and one model's settings (:class:`Group`); the groups run
``jobs`` at a time, each observed by as few runner processes as its kind allows (stage.verify_many:
a crash or a hang is its own target's error, the rest still run). The caller says how a group's
environment is made (made while the bundles export, for `run`; the given interpreter or a cached
environment, for `verify`; the release's, for the nightly) and where progress goes. A target that
cannot be verified at all (its environment cannot be made, its bundle is missing, whatever escapes)
gets an error result naming why, written like every other, so the report never has to guess.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from ci_onnx import matrix
from ci_onnx.contracts.shorten import fit
from ci_onnx.contracts.target import Status, Target
from ci_onnx.contracts.verify_options import VerifyOptions
from ci_onnx.runners import base
from ci_onnx.runners.batch import environment_key, groups
from ci_onnx.verify import stage

Found = stage.Written | Exception
Say = Callable[[str, str, str], None]
"""Where progress goes: target id, state (env, running, then its status), detail (Progress.update)."""


@dataclasses.dataclass(frozen=True)
class Group:
    """Targets verified together: one environment, one model's settings."""

    items: Sequence[tuple[Path, Target]]
    """Each target with its bundle."""
    options: VerifyOptions
    run_config: str | None = None
    """How the results say to reproduce a target (stage.reproduce_command)."""


def verify_groups(
    grouped: Sequence[Group],
    out_dir: Path,
    *,
    environment: Callable[[Target], base.RunnerEnv],
    base_env: Mapping[str, str],
    jobs: int = 1,
    record_errors: bool = True,
    say: Say | None = None,
) -> dict[str, Found]:
    """Verify every group, ``jobs`` at a time; target id → what was written, or the exception that
    stopped it (with ``record_errors``, its error result is written too). ``environment(target)``
    gives the environment of the group ``target`` leads, in that group's thread (what it raises is
    each of the group's targets' error); ``say`` hears each target's progress."""
    found: dict[str, Found] = {}
    lock = threading.Lock()
    tell = say or (lambda target_id, state, detail: None)

    def settle(group: Group, bundle: Path, target: Target, value: Found) -> None:
        if isinstance(value, Exception):
            summary = stage.describe_error(value)
            if record_errors:
                reproduce = stage.reproduce_command(target, bundle, group.run_config)
                with contextlib.suppress(OSError):  # the exception is still returned: the caller says it
                    summary = stage.write_error(target, out_dir, summary, reproduce).result.summary
            tell(target.id, Status.ERROR.value, fit(summary, 100))
        else:
            tell(target.id, value.result.status.value, fit(value.result.summary, 100))
        with lock:
            found[target.id] = value

    def one(group: Group) -> None:
        try:
            for _, t in group.items:
                tell(t.id, "env", "preparing its environment")
            env = environment(group.items[0][1])
        except Exception as exc:  # one environment's trouble never stops the others
            for bundle, t in group.items:
                settle(group, bundle, t, exc)
            return
        for _, t in group.items:
            tell(t.id, "running", f"{env.package} {env.release}")
        try:
            written = stage.verify_many(
                group.items,
                out_dir,
                group.options,
                base_env=base_env,
                environment=env,
                on_written=lambda i, value: settle(group, *group.items[i], value),
                run_config=group.run_config,
            )
        except Exception as exc:  # a runner that cannot start: its targets' errors, never the others'
            written = [exc] * len(group.items)
        for (bundle, t), value in zip(group.items, written, strict=True):
            if t.id not in found:
                settle(group, bundle, t, value)

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for future in [pool.submit(one, g) for g in grouped]:
            future.result()
    return {t.id: found[t.id] for g in grouped for _, t in g.items}


def verify_all(
    items: Sequence[tuple[Path, Target]],
    out_dir: Path,
    options: VerifyOptions,
    *,
    how: base.Provisioning,
    python: str | None = None,
    jobs: int = 1,
    record_errors: bool = True,
    run_config: str | None = None,
) -> dict[str, Found]:
    """`onnx-gate verify`'s targets (``items``: each with its bundle), of one model's ``options``,
    through :func:`verify_groups`. ``python`` serves the targets of a kind that runs in a Python
    interpreter (the interpreter whose onnxruntime they run on, as CI's action installs it); without
    it, this interpreter where it holds a target's release, else the target's cached environment, as
    other kinds are provisioned with ``how``; each environment made once, before any target runs."""
    bundles = {t.id: bundle for bundle, t in items}
    environments: dict[tuple[str, str, str], base.RunnerEnv | Exception] = {}
    for t in (t for _, t in items):
        key = environment_key(t)
        if key not in environments:
            environments[key] = _environment(t, how, python)

    def environment(target: Target) -> base.RunnerEnv:
        env = environments[environment_key(target)]
        if isinstance(env, Exception):
            raise env
        return env

    grouped = [
        Group([(bundles[t.id], t) for t in g], options, run_config)
        for g in groups([t for _, t in items], jobs)
    ]
    found = verify_groups(
        grouped,
        out_dir,
        environment=environment,
        base_env=how.environ,
        jobs=jobs,
        record_errors=record_errors,
    )
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
    from ci_onnx.plan.cijobs import BUNDLE_ARTIFACT

    plain = root / key
    return plain if plain.is_dir() else root / (BUNDLE_ARTIFACT + key)
