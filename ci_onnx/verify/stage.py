"""Verify one target: run its runner in a child process with a timeout, judge, write JSON and JUnit.

The one verify path: ``onnx-gate verify``, ``run`` and ``nightly`` all come here, through the one
orchestrator of targets grouped by environment (ci_onnx.verify.job); :func:`verify_target` provisions
one target's environment and verifies it. The runner kind (ci_onnx.runners.base) launches the child
and collects its Observation; the judge is the same for every kind. A segfault, an abort, a hang or
an out-of-memory kill of the runtime becomes an ``error`` result naming the signal or the timeout;
the result JSON and the JUnit are written anyway. Every child gets proc's allow-listed environment:
no token of any name reaches a runtime process. :func:`verify_many` verifies several targets of one
environment with one runner child where the kind can (a crash still costs only its own target).
"""

from __future__ import annotations

import dataclasses
import datetime
import importlib
import shlex
import shutil
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ci_onnx import matrix
from ci_onnx.config import Config
from ci_onnx.contracts import proc
from ci_onnx.contracts.bundle import MANIFEST, MODEL, Manifest, confined, read_manifest, unencodable
from ci_onnx.contracts.errors import BundleError, GateError, UsageError
from ci_onnx.contracts.results import CheckResult, TargetResult, write_result
from ci_onnx.contracts.shorten import fit
from ci_onnx.contracts.target import Status, Target
from ci_onnx.contracts.verify_options import VerifyOptions, options_from
from ci_onnx.runners import base

if TYPE_CHECKING:
    from ci_onnx.plan import Plan

WARM = ("ci_onnx.verify.judge", "ci_onnx.verify.evidence", "ci_onnx.verify.junit")
"""Imported (numpy with them) while the runner runs, not before: the parent waits on the child anyway."""

RESULTS, JUNIT, OBSERVATIONS = "results", "junit", "observations"


@dataclasses.dataclass(frozen=True)
class Written:
    result: TargetResult
    result_path: Path
    junit_path: Path


def verify(
    bundle_dir: Path,
    target: Target,
    out_dir: Path,
    options: VerifyOptions,
    *,
    python: str | None = None,
    base_env: Mapping[str, str],
    environment: base.RunnerEnv | None = None,
    run_config: str | None = None,
) -> Written:
    """Verify ``target`` on ``bundle_dir`` in ``environment`` (for a Python target, or in ``python``'s
    onnxruntime); write results/ and junit/. ``run_config``: see :func:`reproduce_command`."""
    if environment is None:
        if not matrix.runners()[target.runner].can.interpreter or python is None:
            raise UsageError(
                f"target {target.id}: its {target.runner} runner needs a provisioned environment; "
                "verify it with `onnx-gate run --only` or `onnx-gate verify` without --python"
            )
        from ci_onnx.runners.python import from_interpreter

        environment = from_interpreter(python)
    found = verify_many(
        [(bundle_dir, target)],
        out_dir,
        options,
        base_env=base_env,
        environment=environment,
        run_config=run_config,
    )
    if isinstance(found[0], Exception):
        raise found[0]
    return found[0]


def verify_many(
    items: Sequence[tuple[Path, Target]],
    out_dir: Path,
    options: VerifyOptions,
    *,
    base_env: Mapping[str, str],
    environment: base.RunnerEnv,
    on_written: Callable[[int, Written | Exception], None] | None = None,
    run_config: str | None = None,
) -> list[Written | Exception]:
    """Verify several targets that share ``environment``: one runner child for all of them where the
    kind batches (base.launch_many: a crash or hang is its target's error, the rest still run), each
    judged as soon as its observation is in, while the child goes on. A target's own trouble (a bad
    bundle, an unknown provider) is its slot's exception; ``on_written`` hears each slot when known."""
    slots: list[Written | Exception | None] = [None] * len(items)
    pending: list[_Prepared] = []

    def settle(i: int, value: Written | Exception) -> None:
        slots[i] = value
        if on_written is not None:
            on_written(i, value)

    runner = base.get(environment.kind)
    known: list[tuple[_Prepared, Written]] = []  # verdicts known without running anything
    # The batch child starts now and pays its interpreter and imports while the bundles below are
    # read and hashed; it gets its jobs once they are known (and is ended unused if none are).
    with base.early_child(runner, environment, base_env=base_env, count=len(items)) as early:
        for i, (bundle_dir, target) in enumerate(items):
            try:
                prepared = _prepare(i, bundle_dir, target, out_dir, run_config)
                if prepared.result is not None:
                    written = _write(prepared, prepared.result, out_dir)  # the verdict first
                    known.append((prepared, written))
                    settle(i, written)
                else:
                    pending.append(prepared)
            except Exception as exc:  # the caller records it as that target's error
                settle(i, exc)
        try:
            if pending:
                _launch_and_judge(runner, environment, pending, options, out_dir, base_env, settle, early)
        finally:  # their triages too wait until every verdict of the group is on disk
            for p, written in known:
                if _wants_triage(p, written.result, options):
                    settle(p.index, _with_triage(p, written, environment, options, out_dir, base_env))
    return [s if s is not None else RuntimeError("not verified") for s in slots]


def _launch_and_judge(
    runner: base.Runner,
    environment: base.RunnerEnv,
    pending: Sequence[_Prepared],
    options: VerifyOptions,
    out_dir: Path,
    base_env: Mapping[str, str],
    settle: Callable[[int, Written | Exception], None],
    early: object,
) -> None:
    """Observe the pending targets (in ``early``'s child where there is one) and judge each as soon
    as its observation is in, while the child goes on with the next. Every verdict is written (its
    result and JUnit) as soon as it is known; a failing cell is triaged only once the child is done
    and every verdict is on disk, so that its triage never competes with the next target's timings
    and a triage that is killed or runs out of time costs the triage alone. The triage is then
    attached to the written result."""
    warm = threading.Thread(target=_import, args=(WARM,), daemon=True)
    warm.start()
    later: list[tuple[_Prepared, Written]] = []

    def judged(j: int, done: proc.Completed) -> None:
        p = pending[j]
        warm.join()
        t = time.monotonic()
        try:
            result = _judge_launched(p, done, runner, options)
            spent = done.duration_s + time.monotonic() - t
            written = _write(p, result, out_dir, launched_s=spent)
            if _wants_triage(p, result, options):
                later.append((p, written))
            else:
                settle(p.index, written)
        except Exception as exc:
            settle(p.index, exc)

    launches = [base.Launch(p.bundle_dir, p.target, p.obs_dir, options, p.ep) for p in pending]
    try:
        base.launch_many(runner, environment, launches, base_env=base_env, on_done=judged, early=early)
    finally:
        for p, written in later:
            settle(p.index, _with_triage(p, written, environment, options, out_dir, base_env))


@dataclasses.dataclass
class _Prepared:
    index: int
    bundle_dir: Path
    target: Target
    manifest: Manifest
    started: datetime.datetime
    prepare_s: float
    reproduce: str
    obs_dir: Path = Path()
    ep: str = ""
    expected: str = ""
    result: TargetResult | None = None
    """Known without running anything (the export failed upstream)."""


def reproduce_command(target: Target, bundle_dir: Path, run_config: str | None = None) -> str:
    """The command that verifies ``target`` again, as printed. With the config known (``run_config``,
    "" for the demo matrix, which `onnx-gate run` plans without one), `onnx-gate run --only` (it makes
    the environment and exports the bundle, from its cache); else `onnx-gate verify` on the bundle,
    which makes the target's environment where this interpreter does not hold its release."""
    only = f"--only {shlex.quote(target.id)}"
    if run_config is None:
        return f"onnx-gate verify --bundle {shlex.quote(str(bundle_dir))} --target {shlex.quote(target.id)}"
    return (
        f"onnx-gate run --config {shlex.quote(run_config)} {only}" if run_config else f"onnx-gate run {only}"
    )


def provider_of(target: Target) -> matrix.ProviderInfo:
    """The target's row of the provider table; an unknown provider is a usage error."""
    provider = matrix.providers().get(target.provider)
    if provider is None:
        raise UsageError(
            f"target {target.id!r}: unknown provider {target.provider!r}; "
            f"known: {', '.join(matrix.providers())}"
        )
    return provider


def _prepare(
    index: int, bundle_dir: Path, target: Target, out_dir: Path, run_config: str | None = None
) -> _Prepared:
    started = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    t0 = time.monotonic()
    if not bundle_dir.is_dir():
        raise BundleError(f"{bundle_dir}: no such bundle directory; run `onnx-gate export` first")
    provider = provider_of(target)
    manifest = read_manifest(bundle_dir)
    _check_bundle_matches(target, manifest, bundle_dir)
    reproduce = reproduce_command(target, bundle_dir, run_config)
    p = _Prepared(index, bundle_dir, target, manifest, started, 0.0, reproduce, ep=provider.ep)
    bad_text = unencodable(manifest)
    if bad_text:
        p.result = _bundle_error(
            target,
            manifest,
            f"{bundle_dir / MANIFEST}: {bad_text} holds a lone surrogate, which no ONNX name (UTF-8) can "
            "hold; re-run `onnx-gate export`",
        )
    elif manifest.export_failed or not (bundle_dir / MODEL).is_file():
        p.result = _export_failed(target, manifest)
    else:
        caps = matrix.runners()[target.runner].caps_for(target.runtime)
        loads = caps.cannot_load(manifest.opset, manifest.ir_version) if caps is not None else ""
        p.expected = target.expected_skip or loads
        p.obs_dir = out_dir / OBSERVATIONS / target.id
        if p.obs_dir.exists():
            shutil.rmtree(p.obs_dir)  # never judge a previous run's outputs
        p.obs_dir.mkdir(parents=True)
    p.prepare_s = time.monotonic() - t0
    return p


def _write(p: _Prepared, result: TargetResult, out_dir: Path, *, launched_s: float = 0.0) -> Written:
    """The result with its start, its own duration (preparing, then ``launched_s``: its launch and
    its judging) and how to reproduce it; written to results/ and junit/."""
    t0 = time.monotonic()
    result = dataclasses.replace(
        result,
        started_at=p.started.isoformat(),
        duration_s=round(p.prepare_s + launched_s + (time.monotonic() - t0), 3),
        reproduce=p.reproduce,
    )
    return write(result, out_dir)


def write(result: TargetResult, out_dir: Path) -> Written:
    """``result`` written to results/ and junit/ under ``out_dir``: the one writer of both."""
    from ci_onnx.verify import junit

    return Written(result, write_result(out_dir / RESULTS, result), junit.write(out_dir / JUNIT, result))


def describe_error(exc: Exception) -> str:
    """What an error result says of ``exc``: a GateError's own line, else its type and text."""
    return exc.message if isinstance(exc, GateError) else f"{type(exc).__name__}: {exc}"[:500]


def write_error(target: Target, out_dir: Path, message: str, reproduce: str) -> Written:
    """The error result of a target that could not be verified at all (its environment could not be
    made, its bundle is not there), written to results/ and junit/ like any other."""
    from ci_onnx.verify import judge

    check = CheckResult("environment", Status.ERROR, message)
    return write(dataclasses.replace(judge.result(target, None, [check]), reproduce=reproduce), out_dir)


def _check_bundle_matches(target: Target, manifest: Manifest, bundle_dir: Path) -> None:
    if target.model and manifest.model_name != target.model:
        raise UsageError(
            f"target {target.id} verifies bundle {target.bundle_key}, but {bundle_dir} holds a bundle "
            f"of model {manifest.model_name!r}; pass the matching --bundle"
        )
    if (target.opset, target.exporter, target.precision) != (
        manifest.requested_opset,
        manifest.exporter,
        manifest.precision,
    ):
        raise UsageError(
            f"target {target.id} verifies bundle {target.bundle_key}, but {bundle_dir} holds "
            f"op{manifest.requested_opset}-{manifest.exporter} ({manifest.precision}); "
            "pass the matching --bundle"
        )


def _bundle_error(target: Target, manifest: Manifest, why: str) -> TargetResult:
    """The target's error when its bundle cannot be judged at all (nothing of it is run)."""
    from ci_onnx.verify import judge

    return judge.result(target, manifest, [CheckResult("bundle", Status.ERROR, why)])


def _export_failed(target: Target, manifest: Manifest) -> TargetResult:
    from ci_onnx.verify import judge

    checks = judge.export_checks(manifest)
    blocking = next((c for c in checks if c.status.failing), None)
    if blocking is None:
        checks.append(CheckResult("export", Status.FAILED, f"the bundle holds no {MODEL}"))
        reason = f"the bundle holds no {MODEL}"
    else:
        reason = f"{blocking.name}: {blocking.message}"
    res = judge.result(target, manifest, checks)
    return dataclasses.replace(res, summary=fit(f"export failed upstream: {reason}", 500), export_failed=True)


def verify_target(
    bundle_dir: Path,
    target: Target,
    out_dir: Path,
    options: VerifyOptions,
    how: base.Provisioning,
    *,
    run_config: str | None = None,
) -> Written:
    """Provision ``target``'s environment (cached) with its runner kind, then :func:`verify` in it."""
    environment = base.provision(target, how)
    return verify(
        bundle_dir,
        target,
        out_dir,
        options,
        base_env=how.environ,
        environment=environment,
        run_config=run_config,
    )


def _judge_launched(
    p: _Prepared, done: proc.Completed, runner: base.Runner, options: VerifyOptions
) -> TargetResult:
    """The verdict on what the runner child left in ``p.obs_dir`` (an error result if it failed)."""
    from ci_onnx.verify import evidence, judge

    target, manifest, obs_dir = p.target, p.manifest, p.obs_dir
    try:
        if not done.ok:
            raise base.CollectError(done.describe_failure())
        obs = runner.collect(obs_dir)
    except base.CollectError as exc:
        why = f"the runner process failed: {exc}" if not done.ok else str(exc)
        check = CheckResult("runner", Status.ERROR, why, duration_s=done.duration_s)
        return judge.result(target, manifest, [*judge.export_checks(manifest), check])
    try:
        for files in [
            *obs.outputs.values(),
            *obs.batch_outputs.values(),
            obs.batch_reference,
            *obs.sweep_outputs.values(),
        ]:
            for rel in files.values():
                confined(obs_dir, rel, "observed output")
        tensors = evidence.load(manifest, obs, p.bundle_dir, obs_dir)  # the only file reads of judging
        return judge.judge(target, manifest, obs, tensors, options, p.expected)
    except (BundleError, OSError, ValueError, KeyError, IndexError, OverflowError) as exc:  # a bad .pb
        check = CheckResult(
            "runner",
            Status.ERROR,
            f"the outputs cannot be compared: {getattr(exc, 'message', str(exc))[:400]}",
        )
        return judge.result(target, manifest, [*judge.export_checks(manifest), check])


def _wants_triage(p: _Prepared, result: TargetResult, options: VerifyOptions) -> bool:
    from ci_onnx.triage import attach

    return options.triage_timeout_s > 0 and attach.failing_check(result, p.manifest) is not None


def _triaged(
    p: _Prepared,
    result: TargetResult,
    environment: base.RunnerEnv,
    options: VerifyOptions,
    out_dir: Path,
    base_env: Mapping[str, str],
) -> TargetResult:
    """``result`` with the triage of a failing parity or decision check (ci_onnx.triage)."""
    from ci_onnx.triage import attach

    return attach.for_cell(result, p.manifest, p.bundle_dir, out_dir, environment, options, p.ep, base_env)


def _with_triage(
    p: _Prepared,
    written: Written,
    environment: base.RunnerEnv,
    options: VerifyOptions,
    out_dir: Path,
    base_env: Mapping[str, str],
) -> Written:
    """The written verdict with its triage attached and written again; a triage that raises costs
    the triage alone: the verdict stands as written, and the log says why it has no triage."""
    try:
        found = _triaged(p, written.result, environment, options, out_dir, base_env)
    except Exception:  # a bug in triage must not turn a verdict into an error result
        import logging

        logging.getLogger(__name__).exception("triage of %s failed; its verdict stands", p.target.id)
        return written
    return written if found is written.result else write(found, out_dir)


def _import(modules: tuple[str, ...]) -> None:
    for name in modules:
        importlib.import_module(name)


def settings(
    target_id: str,
    cfg: Config | None,
    plan: Plan | None,
    *,
    timeout_s: float | None = None,
) -> tuple[Target, VerifyOptions]:
    """The target and the settings to verify it by: the plan's (what CI has), the config's when
    given, else the schema's defaults; ``timeout_s`` over all of them."""
    target = plan.get(target_id) if plan is not None else Target.from_id(target_id)
    kinds = matrix.runners()
    if target.runner not in kinds:
        raise UsageError(f"target {target.id}: unknown runner {target.runner!r}; known: {', '.join(kinds)}")
    if target.api_level and "api_level" not in kinds[target.runner].can.id_axes:  # runners.toml: can.id_axes
        with_one = ", ".join(k for k, r in kinds.items() if "api_level" in r.can.id_axes)
        raise UsageError(
            f"target {target.id}: the {target.runner} runner has no API level ({with_one} ids carry one)"
        )
    if cfg is not None or plan is None:
        options = options_from(cfg, timeout_s=timeout_s)
    else:
        options = plan.options_for(target)
        if timeout_s:
            options = dataclasses.replace(options, timeout_s=timeout_s)
    return target, options
