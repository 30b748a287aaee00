"""The CI layout of a plan: its cells grouped into verify jobs, one per environment.

A GitHub-hosted job spends about 40 s setting up before its first step and is billed rounded up to
the minute (bench/PIPELINE.md), while verifying one target in a runner process that serves several
takes about half a second (bench/BATCH.md). So the generated workflows verify the cells of one
environment (runner kind, runtime package and release, runner labels, API level) in one job: one
``onnx-gate verify`` of all of them, each target still with its own result, JUnit and crash
isolation. A group is split when its estimated work (matrix/ci.toml: bundle sizes, batch sizes,
latency runs) exceeds ``ci.max_job_minutes``, or beyond ``ci.max_cells_per_job`` cells where that
is set, so the critical path does not grow with the plan. Each job's estimate keeps one failing
cell's triage (``verify.triage_timeout_s``) on top of its cells' work.

Each job of runners.toml's [jobs] gets its entries as ``strategy.matrix`` objects of at most 256
entries each (GitHub's limit): verify, verify-2 … for a job that declares several matrices.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ci_onnx import matrix
from ci_onnx.contracts import defaults, proc
from ci_onnx.contracts.errors import ConfigError
from ci_onnx.contracts.target import Target

if TYPE_CHECKING:
    from ci_onnx.config import Config
    from ci_onnx.plan import Plan

MAX_JOBS_PER_MATRIX = 256
"""GitHub's limit on the jobs one matrix may generate."""
BUNDLE_ARTIFACT = "onnx-gate-bundle-"
"""A bundle's artifact is this and its key; a verify job downloads its bundles by a pattern of them,
each into a folder of that name (download-artifact's layout for several artifacts)."""
RESULTS_ARTIFACT = "onnx-gate-results-"


@dataclasses.dataclass(frozen=True)
class CiSettings:
    """What a plan carries for its CI layout: the config's ``ci`` section and what the plan could
    see of the bundles' sizes, so the layout needs no checkout."""

    max_job_minutes: float = float(defaults.of("ci.max_job_minutes"))
    max_cells_per_job: int = int(defaults.of("ci.max_cells_per_job"))
    bundle_mb: dict[str, float] = dataclasses.field(default_factory=dict)
    """Each bundle's estimated size in MB; one absent here is estimated at ci.toml's unknown_mb."""
    batch_sizes: tuple[int, ...] = ()
    """verify.batch_sizes: each is served and timed ``latency_runs`` times per target."""
    export: str = str(defaults.of("ci.export"))
    """Where the bundles are exported: ``auto`` (:func:`export_layout` decides), ``plan``, ``jobs``."""


def settings(config: Config, targets: Iterable[Target]) -> CiSettings:
    """The layout settings for ``targets`` of ``config``: its ``ci`` section, and each bundle's size
    from the files the export reads (export.cache.model_bytes), scaled by its precision."""
    from ci_onnx.export.files import model_bytes

    model = model_bytes(config)
    sizes = matrix.estimate().precision_size
    bundle_mb = (
        {t.bundle_key: round(model / 1e6 * sizes.get(t.precision, 1.0), 3) for t in targets}
        if model is not None
        else {}
    )
    return CiSettings(
        max_job_minutes=config.ci.max_job_minutes,
        max_cells_per_job=config.ci.max_cells_per_job,
        bundle_mb=dict(sorted(bundle_mb.items())),
        batch_sizes=tuple(config.verify.batch_sizes),
        export=config.ci.export,
    )


def job_of(target: Target) -> str:
    """The CI job of runners.toml's [jobs] that serves ``target``."""
    return matrix.runners()[target.runner].job_for(target.provider)


def environment(target: Target) -> tuple[Any, ...]:
    """What one verify job shares: its job, runner kind, package, release, labels and API level."""
    info = matrix.runners()[target.runner]
    return (
        job_of(target),
        target.runner,
        info.package_for(target.provider),
        target.runtime,
        info.labels_for(target.provider),
        target.api_level,
    )


def estimate_s(target: Target, plan: Plan) -> float:
    """One target's verify work in a runner process that serves several (matrix/ci.toml)."""
    est = matrix.estimate()
    mb = plan.ci.bundle_mb.get(target.bundle_key, est.unknown_mb)
    return est.target_work_s(mb, plan.options_for(target).latency_runs, plan.ci.batch_sizes)


@dataclasses.dataclass(frozen=True)
class VerifyJob:
    """One matrix entry: the targets of one environment that one verify job runs."""

    job: str
    targets: tuple[Target, ...]
    estimate_s: float
    part: int = 1
    parts: int = 1

    @property
    def name(self) -> str:
        """What the job holds, as GitHub shows it: ``verify ort1.24.1 cpu · 8 targets``."""
        first = self.targets[0]
        providers = ", ".join(dict.fromkeys(t.provider for t in self.targets))
        n = len(self.targets)
        part = f" ({self.part}/{self.parts})" if self.parts > 1 else ""
        return f"verify {first.release_label} {providers} · {n} target{'s' if n != 1 else ''}{part}"

    @property
    def bundles(self) -> tuple[str, ...]:
        """The bundles its targets verify, in the targets' order."""
        return tuple(dict.fromkeys(t.bundle_key for t in self.targets))

    def entry(self) -> dict[str, Any]:
        first = self.targets[0]
        info = matrix.runners()[first.runner]
        names = [BUNDLE_ARTIFACT + b for b in self.bundles]
        return {
            "name": self.name,
            "targets": [t.id for t in self.targets],
            "bundles": list(self.bundles),
            "bundle-pattern": names[0]
            if len(names) == 1
            else BUNDLE_ARTIFACT + "{" + ",".join(self.bundles) + "}",
            "artifact": RESULTS_ARTIFACT + first.id,
            "runtime": first.runtime,
            "providers": list(dict.fromkeys(t.provider for t in self.targets)),
            "package": info.package_for(first.provider),
            "runs-on": list(info.labels_for(first.provider)),
            "runner": first.runner,
            "job": self.job,
            "container": matrix.jobs()[self.job].container,
            "api-level": first.api_level,
            "estimate-s": round(self.estimate_s, 1),
        }


def verify_jobs(plan: Plan) -> list[VerifyJob]:
    """The plan's runnable cells as verify jobs: one per environment, in the plan's order, split
    into near-equal parts where its estimated work or its cell count is over the bound."""
    groups: dict[tuple[Any, ...], list[Target]] = {}
    for t in plan.runnable:
        groups.setdefault(environment(t), []).append(t)
    limit_s = plan.ci.max_job_minutes * 60
    out = []
    for key, members in groups.items():
        work = [estimate_s(t, plan) for t in members]
        reserve = triage_reserve_s(members[0], plan)
        room = limit_s - reserve if reserve < limit_s else limit_s  # a triage longer than a job fits none
        if plan.ci.max_cells_per_job:
            parts = math.ceil(len(members) / plan.ci.max_cells_per_job)
        else:
            parts = min(len(members), max(1, math.ceil(sum(work) / room)))
        size, extra = divmod(len(members), parts)
        start = 0
        for part in range(parts):
            end = start + size + (1 if part < extra else 0)
            chunk = tuple(members[start:end])
            out.append(VerifyJob(key[0], chunk, sum(work[start:end]) + reserve, part + 1, parts))
            start = end
    return out


def triage_reserve_s(target: Target, plan: Plan) -> float:
    """What a verify job keeps for triage: one failing cell's ``verify.triage_timeout_s``. Every result
    is written before the first triage starts (ci_onnx.verify.stage), so a job that runs out of time
    in a later triage loses that triage only, never a verdict; this keeps the first one inside it."""
    return plan.options_for(target).triage_timeout_s


PLAN_EXPORT_SLOTS = 8
"""Bundles the plan job can export itself: its template has an upload-artifact step for each (one
artifact per bundle, as the verify jobs and the next run's side-by-side timing find them)."""


@dataclasses.dataclass(frozen=True)
class ExportLayout:
    """Where a plan's bundles are exported: in the plan job (``in_plan``) or one export job each."""

    in_plan: bool
    bundles: tuple[str, ...]
    export_jobs: tuple[str, ...]
    """The (model, opset, exporter) exports behind the bundles; a derived precision comes with its
    fp32 export."""
    in_plan_s: float
    """The estimated wall time of the exports and uploads in the plan job."""
    jobs_s: float
    """The estimated wall time of one export job per bundle, from its set-up to its upload."""
    why: str

    def describe(self) -> str:
        n = len(self.bundles)
        where = "the plan job" if self.in_plan else f"{n} export job{'s' if n != 1 else ''}"
        return f"  export {n} bundle{'s' if n != 1 else ''} in {where} ({self.why})"


def export_layout(plan: Plan, cpus: int | None = None) -> ExportLayout:
    """Whether the plan job exports the bundles itself, its export children side by side on its
    ``cpus`` (this machine's where not given: the plan job runs on the runner the export jobs
    would), or one export job each does.

    ``auto`` exports in the plan job when that is estimated to end no later than the export jobs
    would (each sets up after the plan job, then exports and uploads one bundle: matrix/ci.toml's
    [estimate.export]), and the plan job has an upload step for every bundle. It saves a job's
    set-up on the critical path and a billed minute for each bundle.
    """
    est = matrix.estimate()
    bundles = tuple(plan.bundle_keys())
    work: dict[str, float] = {}
    for t in plan.runnable:
        mb = plan.ci.bundle_mb.get(t.bundle_key, est.unknown_mb) / est.precision_size.get(t.precision, 1.0)
        work[t.export_key] = max(work.get(t.export_key, 0.0), est.export.job_work_s(mb))
    cpus = max(1, cpus if cpus is not None else proc.cpu_count() or 1)
    longest = max(work.values(), default=0.0)
    side_by_side = max(
        longest, sum(work.values()) / (1 + (min(cpus, len(work)) - 1) * est.export.parallel_efficiency)
    )
    in_plan_s = side_by_side + len(bundles) * est.export.upload_s
    jobs_s = est.export.job_setup_s + longest + est.export.upload_s
    mode = plan.ci.export
    figures = f"about {in_plan_s:.0f} s there, {jobs_s:.0f} s in one export job per bundle"
    if not bundles:
        in_plan, why = False, "no bundle to export"
    elif mode == "jobs":
        in_plan, why = False, "ci.export: jobs"
    elif len(bundles) > PLAN_EXPORT_SLOTS:
        if mode == "plan":
            raise ConfigError(
                f"{plan.config}: ci.export: plan: {len(bundles)} bundles; the plan job exports at most "
                f"{PLAN_EXPORT_SLOTS}; use ci.export: auto or jobs, or fewer opsets, exporters or precisions"
            )
        in_plan, why = False, f"{len(bundles)} bundles, more than the plan job's {PLAN_EXPORT_SLOTS} uploads"
    elif mode == "plan":
        in_plan, why = True, f"ci.export: plan ({figures})"
    else:
        in_plan = in_plan_s <= jobs_s
        why = f"{figures}, on {cpus} CPU{'s' if cpus != 1 else ''}"
    return ExportLayout(in_plan, bundles, tuple(work), in_plan_s, jobs_s, why)


def _chunks(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    chunks = [entries[i : i + MAX_JOBS_PER_MATRIX] for i in range(0, len(entries), MAX_JOBS_PER_MATRIX)]
    return [{"include": chunk} for chunk in chunks] or [{"include": []}]


def job_matrices(plan: Plan, job: str) -> list[dict[str, Any]]:
    """The entries of ``job`` as ``strategy.matrix`` objects of at most 256 entries each."""
    return _chunks([v.entry() for v in verify_jobs(plan) if v.job == job])


def github_outputs(plan: Plan, cpus: int | None = None) -> dict[str, str]:
    """Step outputs for a workflow; every runnable cell lands in exactly one matrix entry.

    For each job of runners.toml's [jobs], every matrix it declares is written (``{"include":[]}``
    when empty: GitHub rejects an empty matrix, so each job is guarded by its count output, the
    targets its matrix holds). A plan larger than the workflows' jobs can hold is an error here,
    never cells that silently go unverified.
    """
    out: dict[str, str] = {}
    entries = verify_jobs(plan)
    for name, job in matrix.jobs().items():
        matrices = job_matrices(plan, name)
        if len(matrices) > job.matrices:
            cells = sum(len(e["targets"]) for m in matrices for e in m["include"])
            n_jobs = sum(len(m["include"]) for m in matrices)
            raise ConfigError(
                f"{plan.config}: targets: {cells} {name} cells in {n_jobs} verify jobs; a workflow runs at "
                f"most {job.matrices * MAX_JOBS_PER_MATRIX} {name} jobs; raise ci.max_cells_per_job or "
                "ci.max_job_minutes, or narrow targets (exclude, fewer runtimes)"
            )
        for n in range(1, job.matrices + 1):
            chunk = matrices[n - 1] if n <= len(matrices) else {"include": []}
            out[job.output_name(n)] = json.dumps(chunk, separators=(",", ":"))
            out[job.count_name(n)] = str(sum(len(e["targets"]) for e in chunk["include"]))
        out[job.count_name()] = str(sum(len(v.targets) for v in entries if v.job == name))
    out["matrices"] = str(sum(len(job_matrices(plan, n)) for n, j in matrix.jobs().items() if j.container))
    out["runner-matrices"] = "1"
    out["verify-jobs"] = str(len(entries))
    out["bundles"] = json.dumps(plan.bundle_keys(), separators=(",", ":"))
    layout = export_layout(plan, cpus)
    # The plan job's own export (its steps are guarded by export-in-plan, an upload step each by its
    # bundle-N), else the export jobs' matrix.
    out["export-in-plan"] = "true" if layout.in_plan else "false"
    out["export-only"] = ",".join(layout.bundles) if layout.in_plan else ""
    for n in range(1, PLAN_EXPORT_SLOTS + 1):
        out[f"bundle-{n}"] = layout.bundles[n - 1] if layout.in_plan and n <= len(layout.bundles) else ""
    out["export-bundles"] = json.dumps([] if layout.in_plan else list(layout.bundles), separators=(",", ":"))
    out["targets"] = str(len(plan.runnable))
    out["expected-skips"] = str(sum(1 for t in plan.targets if t.expected_skip))
    return out


def describe(jobs: Sequence[VerifyJob]) -> str:
    """One line per verify job, for the plan's table: its name and its estimated work."""
    return "\n".join(f"  {v.name} (about {v.estimate_s:.0f} s of work)" for v in jobs)
