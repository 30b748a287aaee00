"""The parent side of ``onnx-gate export``: which bundles, one child process each, progress, verdict.

Imports neither torch nor onnxruntime: an exporter that crashes or hangs takes its child with it, and
becomes a failed ``export`` finding in a bundle that still has a manifest.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from ci_onnx.config import Config
from ci_onnx.contracts import proc
from ci_onnx.contracts.bundle import MODEL, Manifest, read_manifest
from ci_onnx.contracts.errors import EXIT_FAIL, EXIT_PASS, ConfigError, UsageError
from ci_onnx.contracts.results import CheckResult
from ci_onnx.contracts.target import Status, scoped
from ci_onnx.export import writer

PlanKeys = Callable[[Sequence[str]], Sequence[str]]
"""Bundle keys the plan needs for the given --only globs (may ask the package index)."""
Log = Callable[[str], None]


@dataclasses.dataclass(frozen=True)
class Job:
    opset: int
    exporter: str
    model: str = ""
    """The model's name in ids (``Target.model``); "" for the single ``model`` form."""

    @property
    def key(self) -> str:
        """The bundle the job writes, named as its targets' ``bundle_key``."""
        return scoped(self.model, f"op{self.opset}-{self.exporter}")


@dataclasses.dataclass(frozen=True)
class Outcome:
    job: Job
    directory: Path
    manifest: Manifest
    seconds: float

    @property
    def failed(self) -> tuple[CheckResult, ...]:
        return tuple(f for f in self.manifest.findings if f.status.failing)


def candidates(cfg: Config, onnx_opset: int = 0) -> list[Job]:
    """One job per (opset, exporter) of config.export; its other precisions are derived from its graph."""
    if cfg.onnx_only:
        return [Job(onnx_opset, "onnx", cfg.model.id)]
    return [Job(o, e, cfg.model.id) for o in cfg.export.opsets for e in cfg.export.exporters]


def select(
    jobs: Sequence[Job], only: Sequence[str], plan_keys: PlanKeys, precisions: Sequence[str] = ()
) -> list[Job]:
    """Globs that match a bundle key a job writes (its own, or a derived precision's of
    ``precisions``) select it directly; the others go through the plan's target ids."""
    if not only:
        return list(jobs)

    def writes(job: Job, pattern: str) -> bool:
        keys = [job.key, *(f"{job.key}-{p}" for p in precisions if p != "fp32")]
        return any(fnmatch.fnmatchcase(k, pattern) for k in keys)

    direct = [p for p in only if any(writes(j, p) for j in jobs)]
    keep = {j.key for j in jobs if any(writes(j, p) for p in direct)}
    via_plan = [p for p in only if p not in direct]
    if via_plan:
        wanted = set(plan_keys(via_plan))  # a derived precision's key (op17-dynamo-fp16) needs its fp32 job
        keep |= {j.key for j in jobs if any(k == j.key or k.startswith(f"{j.key}-") for k in wanted)}
    chosen = [j for j in jobs if j.key in keep]
    if not chosen:
        raise UsageError(
            f"--only {' '.join(only)} selects no bundle to export; bundles: {', '.join(j.key for j in jobs)}"
        )
    return chosen


def preflight(cfg: Config) -> None:
    """The user errors that can be found without torch, found before any child starts."""
    if cfg.onnx_only:
        return
    from ci_onnx.export import factory, inputs

    factory.check(cfg)
    if cfg.model.samples:
        inputs.labels_of(cfg, inputs.load_samples(cfg.resolve(cfg.model.samples), cfg.model.inputs))
    if "int8-static" in cfg.export.precisions:
        from ci_onnx.export import precision

        precision.calibration_set(cfg)


CHILD_BASE_MB = 600
"""What one export child holds before the model (its interpreter, torch, onnx, onnxruntime): DigitNet's
export child peaks at about 540 MB resident (bench/PIPELINE.md)."""
CHILD_MB_PER_MODEL_MB = 4
"""What it holds per MB of weights on top: the module, its traced or exported copy, the ONNX proto
and the reference session's copy."""


def workers(cfg: Config, n_jobs: int, cpus: int | None = None, available_mb: float | None = None) -> int:
    """How many export children run at once: one per CPU this process may use, no more than there
    are jobs, and no more than the memory available holds children of this model's size."""
    from ci_onnx.export.files import model_bytes

    cpus = cpus if cpus is not None else proc.cpu_count() or 1
    available_mb = available_mb if available_mb is not None else _available_mb()
    weights = model_bytes(cfg)
    child_mb = CHILD_BASE_MB + CHILD_MB_PER_MODEL_MB * (weights or 0) / 1e6
    by_memory = int(available_mb // child_mb) if available_mb else cpus
    return max(1, min(n_jobs, cpus, by_memory))


def _available_mb() -> float:
    """MemAvailable from /proc/meminfo; 0 where it cannot be read (then the CPUs decide)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0.0


def export_all(cfg: Config, jobs: Sequence[Job], out: Path, log: Log, *, parallel: int = 0) -> list[Outcome]:
    """Export ``jobs``, each in its own child and its derived precisions after it, ``parallel``
    children at once (0: :func:`workers`). Outcomes come in the jobs' order, whatever order they
    finish in; a child that crashes or hangs is its own job's failed finding."""
    import concurrent.futures

    preflight(cfg)
    parallel = parallel or workers(cfg, len(jobs))

    def one(n: int, job: Job) -> list[Outcome]:
        prefix = f"[{n}/{len(jobs)}] {job.key}"
        log(f"{prefix}: exporting…")
        outcome = export_one(cfg, job, out / job.key)
        log(f"{prefix}: {describe(outcome)}")
        for line in binding_lines(outcome.manifest):
            log(f"{prefix}: {line}")
        mine = [outcome]
        for precision in (p for p in cfg.export.precisions if p != "fp32"):
            derived = derive_one(cfg, outcome, precision, out)
            log(f"{prefix}-{precision}: {describe(derived)}")
            inherited = len(outcome.manifest.findings[0].warnings)  # the export's own, already logged
            for warning in derived.manifest.findings[0].warnings[inherited:]:
                log(f"{prefix}-{precision}: warning: {warning}")
            mine.append(derived)
        return mine

    if parallel <= 1 or len(jobs) <= 1:
        return [o for n, job in enumerate(jobs, start=1) for o in one(n, job)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="export") as pool:
        futures = [pool.submit(one, n, job) for n, job in enumerate(jobs, start=1)]
        try:
            return [o for f in futures for o in f.result()]
        except BaseException:  # a config error (or Ctrl-C): start no further child, then raise it
            for f in futures:
                f.cancel()
            raise


def derive_one(cfg: Config, source: Outcome, precision: str, out: Path) -> Outcome:
    """The ``precision`` bundle of an fp32 export, in a child (the converters import onnxruntime)."""
    bundle_dir = out / f"{source.job.key}-{precision}"
    if not (source.directory / MODEL).is_file():
        return _no_source(cfg, source, precision, bundle_dir)
    args = [
        sys.executable, "-m", "ci_onnx.export.precision", "--config", str(cfg.path),
        "--precision", precision, "--source", str(source.directory), "--bundle-dir", str(bundle_dir),
        *model_args(cfg),
    ]  # fmt: skip
    done = proc.run(args, timeout=cfg.export.timeout_s, what=f"{precision} of {source.job.key}")
    if done.returncode == ConfigError.exit_code and not done.timed_out:
        raise ConfigError(proc.last_line(done.stderr).removeprefix("onnx-gate: error: "))
    if not done.ok:
        return _no_source(cfg, source, precision, bundle_dir, f"did not finish: {done.describe_failure()}")
    return Outcome(source.job, bundle_dir, read_manifest(bundle_dir), done.duration_s)


def _no_source(cfg: Config, source: Outcome, precision: str, bundle_dir: Path, why: str = "") -> Outcome:
    writer.fresh_dir(bundle_dir)
    reason = f"the {precision} conversion {why}" if why else f"no {precision} bundle: the fp32 export failed"
    manifest = writer.write(
        bundle_dir,
        cfg,
        exporter=source.job.exporter,
        requested_opset=source.job.opset,
        findings=writer.complete([CheckResult("export", Status.FAILED, reason)], f"not run: {reason}"),
        package_versions=source.manifest.versions,
        precision=precision,
    )
    return Outcome(source.job, bundle_dir, manifest, 0.0)


def export_one(cfg: Config, job: Job, bundle_dir: Path) -> Outcome:
    args = [
        sys.executable, "-m", "ci_onnx.export.worker",
        "--config", str(cfg.path), "--opset", str(job.opset), "--exporter", job.exporter,
        "--bundle-dir", str(bundle_dir), *model_args(cfg),
    ]  # fmt: skip
    done = proc.run(args, timeout=cfg.export.timeout_s, what=f"export {job.key}")
    if done.returncode == ConfigError.exit_code and not done.timed_out:
        raise ConfigError(
            proc.last_line(done.stderr).removeprefix("onnx-gate: error: ")
            or f"export {job.key}: the export process exited {done.returncode} without a message "
            "(does model.factory call sys.exit or os._exit?)"
        )
    if not done.ok:
        why = done.describe_failure()
        if done.timed_out:
            why += " (export.timeout_s)"
        writer.fresh_dir(bundle_dir)
        finding = CheckResult("export", Status.FAILED, f"the {job.exporter} export did not finish: {why}")
        writer.write(
            bundle_dir,
            cfg,
            exporter=job.exporter,
            requested_opset=job.opset,
            findings=writer.complete([finding], "not run: the export did not finish"),
            package_versions=writer.versions(*writer.EXPORT_PACKAGES),
        )
    return Outcome(job, bundle_dir, read_manifest(bundle_dir), done.duration_s)


def model_args(cfg: Config) -> list[str]:
    """What a child that reads the config again needs to find ``cfg``'s model among several."""
    return ["--model", cfg.model.id] if cfg.model.id else []


def binding_lines(manifest: Manifest) -> list[str]:
    """How the declared inputs reach ``forward``, where not each by its own name (a silent decision
    otherwise: an input bound by position to a parameter of another name)."""
    from ci_onnx.export import signature

    export = next((f for f in manifest.findings if f.name == "export"), None)
    return signature.shown(export.figures) if export is not None else []


def describe(outcome: Outcome) -> str:
    failed = outcome.failed
    warned = sum(len(f.warnings) for f in outcome.manifest.findings if f.name != "export")
    if not failed:
        extra = f", {warned} warning(s)" if warned else ""
        return f"passed ({len(outcome.manifest.findings)} checks{extra}) in {outcome.seconds:.1f} s"
    first = failed[0]
    return f"FAILED [{', '.join(f.name for f in failed)}] {first.name}: {first.message[:300]}"


def exit_code(outcomes: Sequence[Outcome]) -> int:
    return EXIT_FAIL if any(o.failed for o in outcomes) else EXIT_PASS
