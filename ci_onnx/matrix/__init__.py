"""The declared data of the matrix: what each runtime release loads, where each provider lives, and
which runner kinds observe them.

The data is in the TOML files of matrix/ at the repository root (shipped inside the wheel, found by
ci_onnx._data); this module only reads and types it.
"""

from __future__ import annotations

import dataclasses
import functools
import tomllib
from collections.abc import Iterable

from packaging.version import InvalidVersion, Version

from ci_onnx import _data
from ci_onnx.contracts import serde


@dataclasses.dataclass(frozen=True)
class RuntimeCaps:
    minor: str
    max_opset: int
    max_ir: int
    numpy: str = ""
    cannot_express: tuple[str, ...] = ()
    """ONNX element types (onnxruntime's names) no kernel of the release takes or returns on the CPU,
    measured with scripts/measure_runtime_types.py; empty where not measured."""

    def cannot_hold(self, element_types: Iterable[str]) -> str:
        """Why a model whose inputs or outputs have ``element_types`` cannot run here, or ''."""
        missing = sorted(set(element_types) & set(self.cannot_express))
        if not missing:
            return ""
        return (
            f"onnxruntime {self.minor} cannot express {', '.join(missing)} (no CPU kernel takes or "
            "returns it; measured in matrix/runtimes.toml)"
        )

    def cannot_load(self, opset: int, ir_version: int | None = None) -> str:
        """Why a model at ``opset`` (and ``ir_version``, once a bundle tells it) cannot load on this
        release, or '' when it can."""
        if opset > self.max_opset:
            return (
                f"onnxruntime {self.minor} loads opset <= {self.max_opset}; opset {opset} needs "
                f"onnxruntime >= {first_release_loading(opset)}"
            )
        if ir_version is not None and ir_version > self.max_ir:
            return (
                f"onnxruntime {self.minor} loads IR version <= {self.max_ir}; the exported file has IR "
                f"{ir_version} (the exporter chooses it), which needs onnxruntime >= "
                f"{first_release_loading(ir_version=ir_version)}"
            )
        return ""


@dataclasses.dataclass(frozen=True)
class ProviderInfo:
    name: str
    ep: str
    package: str
    runs_on: tuple[str, ...]
    container: bool
    accelerator: bool
    min_runtime: str = ""
    platforms: tuple[str, ...] = ()
    c_api: str = ""
    """The name ONNX Runtime's C API appends it by (the native observer's ``--ep-append``); empty: none."""


def minor_of(version: str) -> str:
    parts = version.split(".")
    return ".".join(parts[:2])


def version_key(version: str) -> Version:
    """PEP 440 ordering (1.24.0.dev20260101 < 1.24.0 < 1.24.1); an unparsable string sorts first."""
    try:
        return Version(version)
    except InvalidVersion:
        return Version("0")


@functools.cache
def runtimes() -> dict[str, RuntimeCaps]:
    data = tomllib.loads((_data.matrix_dir() / "runtimes.toml").read_text())
    return {
        minor: RuntimeCaps(minor=minor, **{**row, "cannot_express": tuple(row.get("cannot_express", ()))})
        for minor, row in data["runtimes"].items()
    }


@functools.cache
def providers() -> dict[str, ProviderInfo]:
    data = tomllib.loads((_data.matrix_dir() / "providers.toml").read_text())
    return {
        name: serde.from_json(ProviderInfo, {"name": name, **row}) for name, row in data["providers"].items()
    }


@dataclasses.dataclass(frozen=True)
class Capabilities:
    """What a runner kind can do: its row's ``can`` block in runners.toml. Plan, judge, verify and the
    CLI read it here; none of them names a kind."""

    session_options: bool = False
    """Its observer applies session-options presets; other kinds plan a non-default preset as an
    expected skip."""
    optimized_cache: bool = False
    """Its observer keeps an optimized-model cache (the ``optimized-cache`` check); other kinds get
    the check skipped, with why."""
    cold_start: bool = False
    """Its observer times a fresh process to its first answer (the ``cold-start`` check); other kinds
    have it declared unmeasured, with why."""
    interpreter: bool = False
    """It runs in a Python interpreter from PyPI: ``verify --python``, this interpreter when it holds
    the release, the action's install of the release."""
    sweep_points: bool = False
    """Its observer runs the bundle's sweep points (``sweep_sets``: ``sweep[seq=7]``, checked and
    timed); other kinds get those checks skipped, with why."""
    batch_axes: bool = False
    """Its observer splits inputs and stacks outputs along each one's batch axis wherever it lies (a
    seq-first RNN's axis 1); other kinds serve batch sizes only where every batch axis is axis 0, and
    get the batch checks skipped otherwise, with why."""
    id_axes: tuple[str, ...] = ()
    """Parts of its ids beyond the common ones: ``api_level`` (android)."""


@dataclasses.dataclass(frozen=True)
class RunnerInfo:
    """One runner kind (runners.toml): its module, the registry and package of its releases, its job,
    and what it can do."""

    name: str
    module: str
    registry: str
    package: str
    providers: tuple[str, ...]
    job: str
    runs_on: tuple[str, ...] = ()
    missing_release: str = "error"
    """What an exact release the kind's registry lacks is: "error" (a config error naming the nearest
    releases) or "skip" (an expected skip naming them, for a registry that skips releases)."""
    can: Capabilities = dataclasses.field(default_factory=Capabilities)
    releases: tuple[str, ...] = ()
    """A kind that runs another engine than onnxruntime: the specs of that engine's releases it
    verifies (``latest``), resolved on its registry instead of ``targets.runtimes``; its ids name the
    engine (ci_onnx.contracts.target.ENGINE_RUNNERS). Empty: onnxruntime's releases, ``targets.runtimes``."""
    presets: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict)
    """Such a kind's engine-options presets (name → the engine's properties to set), its own axis in
    place of onnxruntime's session options: each of its cells is verified under each preset, a
    non-default one named in the id as a session-options preset is (``-so-f32``)."""

    def presets_with(self, user: dict[str, dict[str, dict[str, str]]] | None) -> dict[str, dict[str, str]]:
        """This kind's engine presets and the config's own for it (``targets.engine_presets``)."""
        return {**self.presets, **(user or {}).get(self.name, {})} if self.presets else {}

    def caps_for(self, release: str) -> RuntimeCaps | None:
        """What ``release`` loads, from onnxruntime's table (runtimes.toml); None for a kind that runs
        another engine (``releases``): its limits are not tabled, the engine says them at load."""
        return None if self.releases else caps_for(release)

    def package_for(self, provider: str) -> str:
        """The package that ships a release of this kind for ``provider``."""
        return self.package or providers()[provider].package

    def index_name(self, provider: str) -> str:
        """The package as a Resolver is asked for it (``npm:onnxruntime-node`` for an npm kind)."""
        package = self.package_for(provider)
        return package if self.registry == "pypi" else f"{self.registry}:{package}"

    def labels_for(self, provider: str) -> tuple[str, ...]:
        return self.runs_on or providers()[provider].runs_on

    def job_for(self, provider: str) -> str:
        """The CI job of runners.toml's [jobs] that verifies this kind's cells of ``provider``: its
        own, or that job's ``fallback`` where the job runs in a container and the provider cannot
        (macOS, Windows, a GPU)."""
        job = jobs()[self.job]
        if job.container and not providers()[provider].container:
            return job.fallback
        return job.name


@functools.cache
def runners() -> dict[str, RunnerInfo]:
    data = tomllib.loads((_data.matrix_dir() / "runners.toml").read_text())
    return {name: serde.from_json(RunnerInfo, {"name": name, **row}) for name, row in data["runners"].items()}


@dataclasses.dataclass(frozen=True)
class Step:
    """One workflow step a CI job declares (runners.toml): a pinned action (``uses``) or a script."""

    uses: str = ""
    """An action of the pinned set (ci_onnx/orchestration/scaffold.py), written with its pin; empty: a
    ``run`` step."""
    name: str = ""
    id: str = ""
    when: str = ""
    """The step's ``if:``."""
    run: str = ""
    with_: dict[str, str] = dataclasses.field(default_factory=dict)
    env: dict[str, str] = dataclasses.field(default_factory=dict)
    continue_on_error: bool = False
    comment: str = ""

    @staticmethod
    def from_row(row: dict[str, object]) -> Step:
        renamed = {"if": "when", "with": "with_", "continue-on-error": "continue_on_error"}
        return serde.from_json(Step, {renamed.get(k, k): v for k, v in row.items()})


@dataclasses.dataclass(frozen=True)
class JobInfo:
    """One CI job of runners.toml's [jobs]: what serves the cells of the kinds that name it."""

    name: str
    verify: str
    """What runs ``onnx-gate verify``: slim (the torch-free container action), runner (the composite
    action) or steps (the job's own ``steps``)."""
    timeout_minutes: int
    id: str = ""
    output: str = ""
    count: str = ""
    matrices: int = 1
    container: bool = False
    """Its verify step is a container action: only providers.toml's container providers."""
    fallback: str = ""
    """With ``container``: the job of the cells whose provider a container cannot serve."""
    optional: bool = False
    baseline: bool = False
    """Its verify step times the base commit's bundles beside the cells' own on a pull request
    (``verify --baseline github``, actions: read), where the PR gate asks for it."""
    comment: str = ""
    env: dict[str, str] = dataclasses.field(default_factory=dict)
    setup: tuple[Step, ...] = ()
    steps: tuple[Step, ...] = ()

    def job_id(self, n: int = 1) -> str:
        """The workflow's job id of its ``n``-th matrix: verify, verify-2 …; verify-node …."""
        return (self.id or f"verify-{self.name}") + ("" if n == 1 else f"-{n}")

    def output_name(self, n: int = 1) -> str:
        """The plan output holding its ``n``-th matrix (matrix, matrix-2 …; matrix-node …)."""
        return (self.output or f"matrix-{self.name}") + ("" if n == 1 else f"-{n}")

    def count_name(self, n: int = 1) -> str:
        """The plan output counting the targets of its ``n``-th matrix ('0': the job is skipped)."""
        return (self.count or f"{self.name}-targets") + ("" if n == 1 else f"-{n}")


VERIFY_BY = ("slim", "runner", "steps")


@functools.cache
def jobs() -> dict[str, JobInfo]:
    """runners.toml's [jobs], in the order the workflows write them."""
    data = tomllib.loads((_data.matrix_dir() / "runners.toml").read_text())
    out = {}
    for name, row in data["jobs"].items():
        steps = {k: tuple(Step.from_row(s) for s in row.get(k, ())) for k in ("setup", "steps")}
        rest = {k: v for k, v in row.items() if k not in steps}
        job = dataclasses.replace(
            serde.from_json(JobInfo, {"name": name, **rest}), setup=steps["setup"], steps=steps["steps"]
        )
        if job.verify not in VERIFY_BY or (job.verify == "steps") != bool(job.steps):
            raise ValueError(
                f"runners.toml: jobs.{name}: verify is one of {', '.join(VERIFY_BY)}; `steps` with steps only"
            )
        out[name] = job
    return out


@dataclasses.dataclass(frozen=True)
class ExportEstimate:
    """ci.toml's [estimate.export]: what decides whether the plan job exports the bundles itself."""

    job_s: float
    """One export job (an opset × exporter and its derived precisions) of a model of no size."""
    s_per_mb: float
    """What each MB of the model's weights adds to it."""
    parallel_efficiency: float
    """Speed-up of the export's children running side by side, per CPU."""
    job_setup_s: float
    """An export job's own set-up on a hosted runner, before its first step."""
    upload_s: float
    """One bundle's upload-artifact step."""

    def job_work_s(self, mb: float) -> float:
        return self.job_s + mb * self.s_per_mb


@dataclasses.dataclass(frozen=True)
class Estimate:
    """ci.toml's [estimate]: what one target's verify work is estimated from (each figure's source
    is named there)."""

    target_s: float
    load_s_per_mb: float
    run_s_per_mb: float
    warmup_runs: int
    unknown_mb: float
    precision_size: dict[str, float]
    export: ExportEstimate

    def target_work_s(self, mb: float, latency_runs: int, batch_sizes: Iterable[int]) -> float:
        samples = (latency_runs + self.warmup_runs) * sum(batch_sizes)
        return self.target_s + mb * (self.load_s_per_mb + self.run_s_per_mb * samples)


@functools.cache
def estimate() -> Estimate:
    data = tomllib.loads((_data.matrix_dir() / "ci.toml").read_text())
    return serde.from_json(Estimate, data["estimate"])


@dataclasses.dataclass(frozen=True)
class Preset:
    runtimes: tuple[str, ...]
    providers: tuple[str, ...]
    opsets: tuple[int, ...]
    exporters: tuple[str, ...]
    openvino: str = ""


@functools.cache
def presets() -> dict[str, Preset]:
    data = tomllib.loads((_data.matrix_dir() / "presets.toml").read_text())
    return {name: serde.from_json(Preset, row) for name, row in data.items()}


def platform_tag(system: str, machine: str) -> str:
    """``linux-x86_64``, ``windows-amd64``, ``macos-arm64``: the names providers.toml uses."""
    system = {"darwin": "macos", "win32": "windows"}.get(system.lower(), system.lower())
    machine = {"amd64": "amd64" if system == "windows" else "x86_64", "aarch64": "arm64"}.get(
        machine.lower(), machine.lower()
    )
    return f"{system}-{machine}"


def caps_for(version: str) -> RuntimeCaps:
    """The capabilities of a release; one newer than the table loads what the newest row loads."""
    table = runtimes()
    minor = minor_of(version)
    if minor in table:
        return table[minor]
    newest = max(table, key=version_key)
    oldest = min(table, key=version_key)
    if version_key(minor) > version_key(newest):
        return dataclasses.replace(table[newest], minor=minor)
    return dataclasses.replace(table[oldest], minor=minor)


def first_release_loading(opset: int = 0, ir_version: int = 0) -> str:
    """The oldest release in the table that loads ``opset`` and ``ir_version``."""
    candidates = [m for m, c in runtimes().items() if c.max_opset >= opset and c.max_ir >= ir_version]
    return min(candidates, key=version_key) if candidates else "(none known yet)"
