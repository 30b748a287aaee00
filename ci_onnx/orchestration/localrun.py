"""`onnx-gate run`: the whole matrix on this machine, the way CI would run it.

plan → export (once per opset × exporter, each in its own process, as CI's export job does) → for
every target, its serving environment (cached, created with uv or venv) and `verify` in parallel →
report. Each stage
talks to the next through the same files as in CI (bundles, results/, junit/, plan.json), so a local
run reproduces a CI run, and a target whose environment cannot be created or whose runtime crashes is
recorded as an error while every other target still runs.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ci_onnx import config as config_mod
from ci_onnx import matrix
from ci_onnx import plan as planning
from ci_onnx.config import Config
from ci_onnx.contracts.errors import ConfigError, GateError
from ci_onnx.contracts.progress import Progress
from ci_onnx.contracts.results import TargetResult
from ci_onnx.contracts.shorten import fit
from ci_onnx.contracts.target import Status, Target
from ci_onnx.host import envs
from ci_onnx.host.resolve import Resolver

if TYPE_CHECKING:
    from ci_onnx.report.baseline import Baseline
    from ci_onnx.runners.base import RunnerEnv

BUNDLES = "bundles"
PLAN = "plan.json"


@dataclasses.dataclass(frozen=True)
class RunOptions:
    out: Path
    cache_dir: Path
    jobs: int
    only: tuple[str, ...] = ()
    live: bool = False
    """Redraw progress in place (a terminal); else one line per change."""
    uv: str | None = None
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """The process environment for child processes (read once, by the CLI)."""
    export_cache: bool = True
    """Reuse cached bundles (ci_onnx/export/cache.py); ``--no-cache`` turns it off."""
    config_arg: str | None = None
    """What the reproduce commands pass as ``--config``: None for the config's path, "" for none (the
    demo matrix, which `onnx-gate run` plans without a config)."""

    def run_config(self, cfg: Config) -> str:
        return str(cfg.path) if self.config_arg is None else self.config_arg

    paired_bundles: Path | None = None
    """The base commit's bundles (``--baseline``, ``--baseline-ref``): each target's base bundle is
    timed beside its own where the runner kind can."""
    base: Baseline | None = None
    """The base commit's run: a model unchanged since then takes its results from it
    (ci_onnx/orchestration/reuse.py)."""
    run_all: bool = False
    """``--all``: every model runs, changed or not."""


@dataclasses.dataclass(frozen=True)
class RunSummary:
    plan: planning.Plan
    statuses: dict[str, Status]
    export_s: float
    verify_s: float
    envs_created: int
    bundles_reused: int = 0


def run(
    configs: Config | Sequence[Config], resolver: Resolver, options: RunOptions, echo: Callable[[str], None]
) -> RunSummary:
    """Every model of ``configs`` (one Config, or each of a ``models`` file's): one plan, each
    model's bundles, every target in its environment (models of one release share it)."""
    from ci_onnx.export import factory
    from ci_onnx.orchestration import reuse

    every = (configs,) if isinstance(configs, Config) else tuple(configs)
    for cfg in every:
        factory.check(cfg)  # before any environment is made for a model that cannot be built
    out = options.out
    out.mkdir(parents=True, exist_ok=True)
    the_plan = planning.select(planning.expand(every, resolver), options.only)
    the_plan = reuse.fingerprinted(the_plan, every, exclude=(out, options.cache_dir))
    if options.base is not None and not options.run_all:
        the_plan = reuse.unchanged(the_plan, options.base, every)
        _keep_base_results(the_plan, options.base, out)
    (out / PLAN).write_text(planning.to_json(the_plan))
    echo(planning.render_table(the_plan) + "\n")

    from ci_onnx.runners.batch import groups

    before = _count_envs(options.cache_dir)
    # each model's targets in groups of their own (a runner child verifies by one model's settings);
    # models of one release share the environment, made once
    grouped = [
        (g, cfg)
        for cfg in every
        for g in groups([t for t in the_plan.runnable if t.model == cfg.model.id], options.jobs)
    ]
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=PROVISIONERS) as provisioner:
        # The environments are made while the bundles export: creating one is downloads and disk
        # (uv), export is torch on the CPU, so neither waits for the other.
        environment = _provision_all(grouped, options, provisioner)
        try:
            echo(f"== export: {', '.join(the_plan.bundle_keys()) or 'nothing to export'}")
            keys = the_plan.bundle_keys()
            reused = sum(_export(cfg, keys, options, echo) for cfg in every if _needed(cfg, the_plan))
            export_s = time.monotonic() - t0
            statuses = _verify_all(the_plan, grouped, environment, options, echo)
        except BaseException:  # an interrupt, or a bug: make no environment nobody will use
            provisioner.shutdown(wait=False, cancel_futures=True)
            raise
    verify_s = time.monotonic() - t0 - export_s
    created = _count_envs(options.cache_dir) - before
    return RunSummary(the_plan, statuses, export_s, verify_s, created, reused)


def _needed(cfg: Config, the_plan: planning.Plan) -> bool:
    return any(t.model == cfg.model.id for t in the_plan.runnable)


def _keep_base_results(the_plan: planning.Plan, base: Baseline, out: Path) -> None:
    """The base's results and JUnit of each model unchanged since it, written into this run's
    results/ and junit/ as any other, so that this --out is whole for a later --baseline."""
    from ci_onnx.verify import stage

    reused = {m.id for m in the_plan.models if m.unchanged_since}
    for t in the_plan.targets:
        result = base.results.get(t.id)
        if t.model in reused and result is not None:
            stage.write(result, out)


PROVISIONERS = 2
"""Environments made at a time while the bundles export (uv itself downloads in parallel)."""


def _provision_all(
    grouped: Sequence[tuple[Sequence[Target], Config]],
    options: RunOptions,
    pool: concurrent.futures.ThreadPoolExecutor,
) -> Callable[[Target], RunnerEnv]:
    """Every group's environment, each made once however many groups share it, started now in
    ``pool``; what it returns waits for the environment of a target's group (or raises what stopped it)."""
    from ci_onnx.runners import base
    from ci_onnx.runners.batch import environment_key

    how = base.Provisioning(options.cache_dir, options.env, options.uv)
    by_key: dict[tuple[str, str, str], concurrent.futures.Future[RunnerEnv]] = {}
    for g, _ in grouped:
        key = environment_key(g[0])
        if key not in by_key:
            by_key[key] = pool.submit(base.provision, g[0], how)
    return lambda target: by_key[environment_key(target)].result()


def _verify_all(
    the_plan: planning.Plan,
    grouped: Sequence[tuple[Sequence[Target], Config]],
    environment: Callable[[Target], RunnerEnv],
    options: RunOptions,
    echo: Callable[[str], None],
) -> dict[str, Status]:
    echo(f"== verify: {len(the_plan.runnable)} target(s), {options.jobs} at a time")
    progress = Progress([t.id for t in the_plan.targets], sys.stderr, live=options.live)
    statuses: dict[str, Status] = {}
    runnable = set(the_plan.runnable)
    for t in the_plan.targets:
        if t.expected_skip:
            statuses[t.id] = Status.EXPECTED
            progress.update(t.id, "expected", t.expected_skip)
        elif t not in runnable:  # its model is unchanged since the base: the base's result stands
            m = the_plan.planned_model(t.model)
            progress.update(
                t.id, "unchanged", f"since {m.unchanged_since[:7] if m else 'the base'}, not re-run"
            )
    return statuses | _verify_groups(grouped, options, progress, environment)


def _export(cfg: Config, bundle_keys: Sequence[str], options: RunOptions, echo: Callable[[str], None]) -> int:
    """Export the bundles the plan needs, from the Config in hand (which may differ from the file on
    disk: the demo matrix replaces the example's opsets), each in its own process as in CI; or reuse
    them from the cache when nothing that determines them changed. Returns how many were reused."""
    from ci_onnx.export import cache, parent

    jobs = [  # a derived precision's bundle (op17-dynamo-fp16) comes from its fp32 export; one model's
        job
        for job in parent.candidates(cfg, planning.onnx_opset(cfg))
        if any(k == job.key or k.startswith(f"{job.key}-") for k in bundle_keys)
    ]
    outcomes = cache.export_cached(
        cfg,
        jobs,
        options.out / BUNDLES,
        lambda line: echo(f"   {line}"),
        cache_root=options.cache_dir,
        enabled=options.export_cache and cfg.export.cache,
        exclude=(options.out, options.cache_dir),
    )
    failed = [o.directory.name for o in outcomes if o.failed]
    if failed:
        echo(f"   a check failed for {', '.join(failed)}: each of their targets reports why")
    return sum(1 for o in outcomes if cache.was_reused(o.manifest))


def _verify_groups(
    grouped: Sequence[tuple[Sequence[Target], Config]],
    options: RunOptions,
    progress: Progress,
    environment: Callable[[Target], RunnerEnv] | None = None,
) -> dict[str, Status]:
    """Each group (targets that share an environment, with their model's config) through the one
    orchestrator (ci_onnx.verify.job), ``options.jobs`` at a time: one runner process per environment
    where the kind batches (a crash or hang is its own target's error; the rest still run), each
    target's state on ``progress``. ``environment``: the environments made while the bundles
    exported; without it each group's is made in its turn."""
    from ci_onnx.runners import base
    from ci_onnx.verify import job, stage

    if environment is None:
        how = base.Provisioning(options.cache_dir, options.env, options.uv)
        environment = lambda target: base.provision(target, how)  # noqa: E731
    paired = str(options.paired_bundles or "")
    found = job.verify_groups(
        [
            job.Group(
                [(options.out / BUNDLES / t.bundle_key, t) for t in targets],
                dataclasses.replace(stage.options_from(cfg), paired_bundles=paired),
                options.run_config(cfg),
            )
            for targets, cfg in grouped
        ],
        options.out,
        environment=environment,
        base_env=options.env,
        jobs=options.jobs,
        say=progress.update,
    )
    return {
        tid: Status.ERROR if isinstance(value, Exception) else value.result.status
        for tid, value in found.items()
    }


def terminal_table(results_dir: Path, plan: planning.Plan) -> str:
    """One line per target for the terminal: verdict, parity, decisions, CPU share, median latency,
    and why a target was skipped or failed."""
    from ci_onnx.contracts.results import read_result

    found: dict[str, TargetResult] = {}
    for p in sorted(results_dir.glob("*.json")):
        try:
            found[p.stem] = read_result(p)
        except GateError:  # the report lists it as a problem; the table shows it as missing
            continue
    head = (
        "target",
        "verdict",
        "max abs",
        "decisions",
        "CPU share",
        "p50 ms (largest batch)",
        "cold start ms",
    )
    rows = [(*head, "why")]
    for t in plan.targets:
        r = found.get(t.id)
        if r is None:
            why = fit(t.expected_skip, 100) if t.expected_skip else "no result was written"
            rows.append((t.id, "expected" if t.expected_skip else "missing", "", "", "", "", "", why))
            continue
        max_abs = max((p.max_abs for p in r.parity), default=None)
        d = r.decisions
        obs = r.observed
        share = obs.placement.cpu_time_share if obs.placement and t.provider != "cpu" else None
        lat = max(obs.latency, key=lambda s: s.batch_size, default=None)
        cold = obs.serving.cold_start_ms if obs.serving else None
        rows.append(
            (
                t.id,
                r.status.value,
                f"{max_abs:.2e}" if max_abs is not None else "",
                f"{d.changed}/{d.total} changed" if d else "",
                f"{share:.1%}" if share is not None else "",
                f"{lat.p50_ms:.2f} (batch {lat.batch_size})" if lat else "",
                f"{cold:.0f}" if cold is not None else "",
                fit(r.summary, 100) if r.status.value != "passed" else "",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows)


def _count_envs(cache_dir: Path) -> int:
    """Environments ready in the cache, of every runner kind (uv environments, npm installs)."""
    return sum(1 for root in (cache_dir / "envs", cache_dir / "npm") for _ in root.glob("*/" + envs.READY))


def example_config(package_dir: Path) -> Path:
    """The bundled example's onnx-gate.yml (in a source checkout or an editable install)."""
    example = package_dir.parent / "examples" / "tinycnn" / config_mod.DEFAULT_NAME
    if not example.is_file():
        raise ConfigError(
            f"{config_mod.DEFAULT_NAME}: no such file here, and no bundled example next to this "
            "installation; pass --config or run `onnx-gate init`"
        )
    return example


def demo_config(example: Config, installed: str, platform: str) -> Config:
    """The example model with the demo matrix of matrix/presets.toml.

    ``installed`` is the onnxruntime version beside onnx-gate (the preset's ``installed``), and
    ``platform`` decides whether onnxruntime-openvino joins (only where it has wheels).
    """
    preset = matrix.presets()["demo"]
    runtimes = tuple(dict.fromkeys(installed if r == "installed" else r for r in preset.runtimes))
    include: tuple[dict[str, str], ...] = ()
    openvino = matrix.providers()["openvino"]
    if preset.openvino and platform in openvino.platforms:
        include = tuple(
            {"runtime": preset.openvino, "provider": "openvino", "opset": str(o), "exporter": "dynamo"}
            for o in preset.opsets
        )
    return dataclasses.replace(
        example,
        export=dataclasses.replace(example.export, opsets=preset.opsets, exporters=preset.exporters),
        targets=config_mod.TargetsConfig(
            runtimes=runtimes, providers=preset.providers, include=include, exclude=()
        ),
    )


def default_jobs(cpu_count: int | None) -> int:
    return max(1, cpu_count or 1)


def child_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment for export and runner processes: the one rule, :func:`proc.child_environment`."""
    from ci_onnx.contracts import proc

    return proc.child_environment(environ)
