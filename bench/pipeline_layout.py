"""Verify jobs per cell (the layout before) against per environment (ci_onnx/plan/cijobs.py), modelled.

The parts are bench/pipeline_model.py's (the slim design: the full image for export, the torch-free
one for every other job) plus what a grouped job does differently, measured on the same commit:
one ``onnx-gate verify`` of several targets of one environment against one of a single target (so
the work of N targets in one job is ``fixed + N × per_target``), ``onnx-gate export --cache-key``
and an export whose bundles come from the export cache. The verify jobs of the grouped layout are
the ones ci_onnx.plan.cijobs makes of a plan of that shape (its grouping, its estimate and its split),
not a copy of its rules. Every job is billed rounded up to a whole minute; the critical path is
plan → export (in waves of ``concurrency``) → verify (in waves) → report.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bench.pipeline_model import Assumptions, Parts
    from ci_onnx.plan import Plan


@dataclasses.dataclass(frozen=True)
class ModelCosts:
    """What one model's jobs measured here (seconds, MB)."""

    name: str
    export_s: float
    """One export job's command: an opset × exporter with every precision of the config (a job of a
    derived precision's bundle exports its fp32 graph again and converts it), named by its bundle's
    key as the workflows name it now (``--only op17-dynamo``: no plan, no package index)."""
    export_before_s: float
    """The same as the per-cell workflows named it (``--only '*-op17-dynamo'``, through the plan)."""
    verify_one_s: float
    """``onnx-gate verify`` of one target (today's verify job's work)."""
    verify_many_s: float
    """``onnx-gate verify`` of ``many`` targets of one environment in one command (``--jobs 1``)."""
    many: int
    bundle_mb: float
    key_s: float
    """``onnx-gate export --cache-key``: the grouped layout's export job computes it first."""
    restored_s: float
    """``onnx-gate export --cache-dir`` when the cache holds the bundle (checked and copied out)."""
    export_serial_s: float = 0.0
    """``onnx-gate export --jobs 1`` of every bundle of the config in one command: its export jobs
    one after another."""
    export_every_s: float = 0.0
    """The same, its children side by side (the default; the plan job's export)."""
    export_jobs: int = 1
    """The export jobs (opset × exporter) those commands ran."""
    verify_side_by_side_s: float = 0.0
    """The ``many`` targets' verify with ``--jobs`` = the modelled runner's CPUs, as a CI verify job
    runs its targets (every core); 0: not measured, the targets are modelled one after another."""

    @property
    def job_s(self) -> float:
        """One export job's child: what each job after the first adds when they run one after another."""
        if self.export_jobs < 2 or not self.export_serial_s:
            return self.export_s
        return (self.export_serial_s - self.export_s) / (self.export_jobs - 1)

    def parallel_efficiency(self, cpus: int) -> float:
        """What each CPU beyond the first adds to the speed of the children side by side (1: as much
        as the first)."""
        if self.export_jobs < 2 or cpus < 2 or not (self.export_every_s and self.export_serial_s):
            return 0.0
        parent = self.export_s - self.job_s
        speedup = (self.export_serial_s - parent) / (self.export_every_s - parent)
        return (speedup - 1) / (min(cpus, self.export_jobs) - 1)

    def export_many_s(self, jobs: int, cpus: int) -> float:
        """``jobs`` export jobs of this model in one command on ``cpus``: the parent once, the
        children side by side at the measured efficiency, never quicker than one child."""
        lanes = 1 + (min(cpus, jobs) - 1) * self.parallel_efficiency(cpus)
        return _over_lanes(self.export_s - self.job_s, self.job_s, jobs, lanes)

    @property
    def per_target_s(self) -> float:
        return max(0.0, (self.verify_many_s - self.verify_one_s) / (self.many - 1))

    @property
    def verify_start_s(self) -> float:
        """What one verify command pays once, before its first target."""
        return max(0.0, self.verify_one_s - self.per_target_s)

    def verify_efficiency(self, cpus: int) -> float | None:
        """What each CPU beyond the first adds to the speed of the targets side by side (1: as much
        as the first; below 0: slower than one after another), or None where it was not measured."""
        if self.many < 2 or cpus < 2 or not self.verify_side_by_side_s or not self.per_target_s:
            return None
        spent = self.verify_side_by_side_s - self.verify_start_s
        lanes = self.many * self.per_target_s / spent if spent > 0 else float(min(cpus, self.many))
        return (lanes - 1) / (min(cpus, self.many) - 1)

    def verify_work_s(self, n: int, cpus: int = 1) -> float:
        """``n`` targets of one environment in one command on ``cpus``: its start once, then the
        targets, side by side at the measured efficiency where it was measured."""
        efficiency = self.verify_efficiency(cpus)
        if efficiency is None or n < 2:
            return self.verify_one_s + (n - 1) * self.per_target_s
        lanes = max(0.5, 1 + (min(cpus, n) - 1) * efficiency)
        return _over_lanes(self.verify_start_s, self.per_target_s, n, lanes)


def _over_lanes(start_s: float, each_s: float, n: int, lanes: float) -> float:
    """A command's own start once, then ``n`` pieces of ``each_s`` over ``lanes`` (never quicker
    than one piece)."""
    return start_s + max(each_s, n * each_s / lanes)


@dataclasses.dataclass(frozen=True)
class Shape:
    """A plan's shape: its bundles, and how many targets each of its environments holds."""

    name: str
    model: str
    bundles: int
    environments: tuple[int, ...]
    precisions: tuple[str, ...] = ("fp32",)
    """Each export job's bundles: the bundles are ``bundles / len(precisions)`` export jobs."""

    @property
    def export_jobs(self) -> int:
        return self.bundles // len(self.precisions)

    @property
    def targets(self) -> int:
        return sum(self.environments)


SHAPES = (
    Shape("the example (examples/tinycnn: 4 bundles, 3 environments, 12 targets)", "tinycnn", 4, (4, 4, 4)),
    Shape(
        "MiniLM with precisions (fp32, fp16, int8-dynamic: 3 bundles, 1 environment)",
        "minilm",
        3,
        (3,),
        ("fp32", "fp16", "int8-dynamic"),
    ),
    Shape(
        "a 64-target plan (4 bundles × 4 releases × cpu, openvino × 2 session presets)",
        "tinycnn",
        4,
        (8,) * 8,
    ),
    Shape("a 264-target plan (8 bundles × 33 releases, as the act scenario)", "tinycnn", 8, (8,) * 33),
)
LAYOUTS = ("per cell", "per environment, export jobs", "per environment")
"""The layout before; verify jobs per environment with one export job per bundle (``ci.export:
jobs``); and what the workflows do by default (``ci.export: auto``): the plan job exports where
ci_onnx.plan.cijobs.export_layout says that ends no later."""
CPUS = 2
"""A GitHub-hosted Linux runner of a private repository (the ones billed): 2 CPUs."""


@dataclasses.dataclass(frozen=True)
class Run:
    """One layout's jobs for one shape: each job's kind and seconds."""

    jobs: tuple[tuple[str, float], ...]
    critical_path_s: float

    @property
    def runner_minutes(self) -> float:
        return sum(s for _, s in self.jobs) / 60

    @property
    def billed_minutes(self) -> int:
        return sum(math.ceil(s / 60) for _, s in self.jobs)

    def count(self, kind: str) -> int:
        return sum(1 for k, _ in self.jobs if k == kind)


def _plan(shape: Shape, costs: ModelCosts) -> Plan:
    """A plan of this shape: one environment per release and provider, its cells across the bundles
    (opsets × the shape's precisions)."""
    from ci_onnx import matrix
    from ci_onnx import plan as planning
    from ci_onnx.contracts.target import Target
    from ci_onnx.plan import cijobs

    targets = []
    for e, n in enumerate(shape.environments):
        for i in range(n):
            b = i % shape.bundles
            preset = ("default", "basic", "extended", "no_opt")[i // shape.bundles % 4]
            precision = shape.precisions[b % len(shape.precisions)]
            opset = 7 + b // len(shape.precisions)
            targets.append(
                Target(f"1.{20 + e}.0", "cpu", opset, "dynamo", session_options=preset, precision=precision)
            )
    size = matrix.estimate().precision_size
    bundle_mb = {t.bundle_key: costs.bundle_mb * size[t.precision] for t in targets}
    ci = cijobs.CiSettings(bundle_mb=bundle_mb)
    return planning.Plan(1, "shape.yml", shape.model, tuple(targets), ci=ci)


def _groups(plan: Plan) -> list[int]:
    """The grouped layout's verify jobs (targets in each), as ci_onnx.plan.cijobs lays the plan out."""
    from ci_onnx.plan import cijobs

    return [len(v.targets) for v in cijobs.verify_jobs(plan)]


def in_plan(shape: Shape, costs: ModelCosts) -> bool:
    """Whether ci_onnx.plan.cijobs (``ci.export: auto``) has the plan job export a plan of this shape."""
    from ci_onnx.plan import cijobs

    return cijobs.export_layout(_plan(shape, costs), cpus=CPUS).in_plan


def run(
    layout: str, shape: Shape, costs: ModelCosts, p: Parts, a: Assumptions, *, restored: bool = False
) -> Run:
    """The jobs of ``layout`` for ``shape``; ``restored``: every bundle's export cache key is unchanged
    since the base commit (the grouped layout's exports restore them instead of exporting)."""
    from bench.pipeline_model import jobs as job_kinds

    if layout not in LAYOUTS:
        raise ValueError(f"layout {layout!r}: choose from {', '.join(LAYOUTS)}")
    kinds = job_kinds("slim", p, a)
    transfer = costs.bundle_mb / a.artifact_mb_per_s
    plan_s, report_s = kinds["plan"].total_s, kinds["report"].total_s
    export_setup = kinds["export"].setup_s + transfer  # its bundle uploaded
    verify_setup = kinds["verify"].setup_s  # plan and bundle downloads, results upload, the runtime
    plan = _plan(shape, costs)
    export: list[float] = []
    if layout == "per cell":
        export = [export_setup + costs.export_before_s] * shape.bundles
        verify = [verify_setup + transfer + costs.verify_one_s] * shape.targets
    else:
        # the plan job's export steps use the full image, and GitHub pulls every container action's
        # image while it sets the job up, a step that will skip included
        plan_s += (kinds["export"].setup_mb - kinds["plan"].setup_mb) / a.pull_mb_per_s
        cache_step = a.artifact_s + (transfer if restored else 0.0)
        if layout == "per environment" and in_plan(shape, costs):
            # the plan job: its key, its cache, one export of every bundle, an upload each
            work = costs.restored_s if restored else costs.export_many_s(shape.export_jobs, CPUS)
            plan_s += costs.key_s + cache_step + work + shape.bundles * (transfer + a.artifact_s)
        else:
            work = costs.restored_s if restored else costs.export_s
            export = [export_setup + costs.key_s + cache_step + work] * shape.bundles
        verify = [
            verify_setup + min(n, shape.bundles) * transfer + costs.verify_work_s(n, CPUS)
            for n in _groups(plan)
        ]
    waves = _waves(export, a.concurrency) + _waves(verify, a.concurrency)
    jobs = [("plan", plan_s), *(("export", s) for s in export), *(("verify", s) for s in verify)]
    return Run((*jobs, ("report", report_s)), plan_s + waves + report_s)


def _waves(seconds: Sequence[float], concurrency: int) -> float:
    """Jobs of one stage started ``concurrency`` at a time, longest first: the stage's wall time."""
    ordered = sorted(seconds, reverse=True)
    return sum(ordered[i] for i in range(0, len(ordered), concurrency))


def render(costs: Mapping[str, ModelCosts], p: Parts, a: Assumptions) -> list[str]:
    lines = ["### Verify jobs per cell against per environment", ""]
    lines += [
        "| model | export job (through the plan) | verify, 1 target | verify, N targets of one environment "
        "| per target after the first | bundle | `--cache-key` | export from the cache "
        "| export, every bundle in one command |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for c in costs.values():
        every = (
            f"{c.export_every_s:.1f} s side by side, {c.export_serial_s:.1f} s one after another "
            f"({c.export_jobs} export jobs: {c.job_s:.1f} s each, parallel efficiency "
            f"{c.parallel_efficiency(CPUS):.2f} on {CPUS} CPUs)"
            if c.export_jobs > 1 and c.export_every_s
            else "its export job (one opset × exporter)"
        )
        efficiency = c.verify_efficiency(CPUS)
        side = (
            f", {c.verify_side_by_side_s:.2f} s side by side (`--jobs {CPUS}`, parallel efficiency "
            f"{efficiency:.2f})"
            if efficiency is not None
            else ""
        )
        lines.append(
            f"| {c.name} | {c.export_s:.1f} s ({c.export_before_s:.1f} s) | {c.verify_one_s:.2f} s | "
            f"{c.verify_many_s:.2f} s (N = {c.many}){side} | {c.per_target_s:.2f} s | "
            f"{c.bundle_mb:.1f} MB | {c.key_s:.2f} s | "
            f"{c.restored_s:.2f} s | {every} |"
        )
    lines += [
        "",
        "Medians of the same interleaved runs as the parts above. `per cell`: one verify job per target "
        "(the layout before); `per environment`: one per runner kind, package, release and labels, split "
        "where ci_onnx/plan/cijobs.py's estimate exceeds `ci.max_job_minutes` (10), its targets verified by "
        f"one command, side by side on the runner's {CPUS} CPUs as a verify job runs them (every core), at "
        "the parallel efficiency measured (one after another where it was not measured). Every "
        "export computes the export cache key and asks actions/cache first. `export jobs`: one export "
        "job per bundle (`ci.export: jobs`). Without it (`ci.export: auto`, the default) the plan job "
        "exports every bundle itself, side by side, where ci_onnx/plan/cijobs.py's estimate (matrix/ci.toml) "
        f"says that ends no later than export jobs would on a {CPUS}-CPU runner, and uploads each; a "
        "plan without a `per environment (exports in the plan job)` row keeps its export jobs. Either "
        "way the plan job pulls the full image too: GitHub pulls every container action's image while "
        "it sets a job up, that of a step that will skip included.",
        "",
        "| plan | layout | jobs (verify) | runner minutes | billed minutes | critical path |",
        "|---|---|---|---|---|---|",
    ]
    for shape in SHAPES:
        c = costs.get(shape.model)
        if c is None:
            lines.append(f"| {shape.name} | — | not measured in this run | | | |")
            continue
        here = in_plan(shape, c)
        rows = [
            ("per cell", False),
            ("per environment, export jobs", False),
            ("per environment, export jobs", True),
        ]
        if here:  # else `auto` is the export jobs' rows above
            rows += [("per environment", False), ("per environment", True)]
        where = "exports in the plan job" if here else "export jobs"
        for layout, restored in rows:
            r = run(layout, shape, c, p, a, restored=restored)
            name = layout if layout != "per environment" else f"per environment ({where})"
            name += ", bundles restored" if restored else ""
            lines.append(
                f"| {shape.name} | {name} | {len(r.jobs)} ({r.count('verify')}) | {r.runner_minutes:.1f} | "
                f"{r.billed_minutes} | {r.critical_path_s / 60:.1f} min ({r.critical_path_s:.0f} s) |"
            )
    return lines


def goals(costs: Mapping[str, ModelCosts], p: Parts, a: Assumptions) -> list[str]:
    """The issue's targets: billed minutes of the example ≤ 1/3 and of the 64-target plan ≤ 1/4 of
    the per-cell layout's, the critical path no longer."""
    from bench import harness

    out = []
    for shape, share in ((SHAPES[0], 3), (SHAPES[2], 4)):
        c = costs.get(shape.model)
        if c is None:
            continue
        before = run("per cell", shape, c, p, a)
        for restored in (False, True):
            after = run("per environment", shape, c, p, a, restored=restored)
            when = "bundles restored" if restored else "every bundle exported"
            out.append(
                "- "
                + harness.verdict(
                    after.billed_minutes * share <= before.billed_minutes,
                    f"{shape.name}, {when}: {after.billed_minutes} billed minutes against "
                    f"{before.billed_minutes}",
                    f"≤ 1/{share}",
                )
            )
            out.append(
                "- "
                + harness.verdict(
                    after.critical_path_s <= before.critical_path_s,
                    f"{shape.name}, {when}: critical path {after.critical_path_s:.0f} s against "
                    f"{before.critical_path_s:.0f} s",
                    "no longer",
                )
            )
    return out
