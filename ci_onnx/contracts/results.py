"""What a runner observed, and the verdict onnx-gate draws from it.

A runner (onnxruntime in Python, and later Node, the browser, Android) only observes: it writes an
Observation (JSON, plus raw outputs as TensorProto files). Comparison and verdicts live once, in
Python, and produce a TargetResult; both are language-neutral files with JSON Schemas in
ci_onnx/schemas/.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ci_onnx.contracts import serde
from ci_onnx.contracts.errors import UsageError
from ci_onnx.contracts.target import Status, Target
from ci_onnx.contracts.triage_contract import Triage

SCHEMA_VERSION = 1
"""The Observation's version (the Python, Node, browser, C and Android observers write it)."""
RESULT_SCHEMA_VERSION = 2
"""The TargetResult's version. 2: the result carries the runner's Observation whole (``observation``)
instead of copies of its figures; a version 1 result (a baseline written by an older onnx-gate) is
still read, its figures moved into an observation (``read_result``)."""


@dataclasses.dataclass(frozen=True)
class Environment:
    runtime_version: str
    providers_available: tuple[str, ...]
    """What the installed package offers (onnxruntime.get_available_providers())."""
    providers_registered: tuple[str, ...]
    """What the session actually registered (InferenceSession.get_providers())."""
    platform: str
    runner: str = "ort-python"
    runner_version: str = ""


@dataclasses.dataclass(frozen=True)
class PlacedNode:
    name: str
    op_type: str
    provider: str
    time_us: float = 0.0


@dataclasses.dataclass(frozen=True)
class Placement:
    """Where every node ran, and how the time split between providers."""

    source: str
    """How it was learnt: ``assignment-info``, ``profile`` or ``verbose-log``."""
    nodes_by_provider: dict[str, int]
    time_us_by_provider: dict[str, float]
    fallback_nodes: tuple[PlacedNode, ...]
    """Nodes that ran on CPUExecutionProvider although another provider was asked for."""

    @property
    def cpu_time_share(self) -> float:
        total = sum(self.time_us_by_provider.values())
        return self.time_us_by_provider.get("CPUExecutionProvider", 0.0) / total if total else 0.0


TAIL_FROM = 100
"""From this many runs the tail is the p99; below it the p99 is the maximum, and is named so."""


def tail(samples: Sequence[float]) -> tuple[float, str]:
    """The tail figure and its honest name: the p99 from TAIL_FROM runs on, else the maximum."""
    if len(samples) >= TAIL_FROM:
        ordered = sorted(samples)
        return ordered[math.ceil(0.99 * len(ordered)) - 1], "p99"
    return max(samples), f"max of {len(samples)}"


@dataclasses.dataclass(frozen=True)
class LatencyStat:
    batch_size: int
    p50_ms: float
    p90_ms: float
    p99_ms: float
    runs: int
    samples_ms: tuple[float, ...] = dataclasses.field(default=(), metadata=serde.OMIT_DEFAULT)
    """Every timed run in ms, in the order timed: what a comparison with the base tests (the
    percentiles alone cannot tell noise from change). Empty from runners that do not record them."""
    point: str = dataclasses.field(default="", metadata=serde.OMIT_DEFAULT)
    """A sweep point (``seq=7``), where ``batch_size`` is the samples stacked at it; empty: a batch size."""
    first_ms: float | None = dataclasses.field(default=None, metadata=serde.OMIT_DEFAULT)
    """The session's first run at this shape, before the warm-up (allocations, kernels chosen)."""
    peak_rss_mb: float | None = dataclasses.field(default=None, metadata=serde.OMIT_DEFAULT)
    """The highest resident set size sampled after each timed run at this shape (one thread)."""

    def tail(self) -> tuple[float, str]:
        """The tail with its honest name (:func:`tail` of the samples); without samples, the p99 the
        runner computed, named for the runs it interpolates."""
        if self.samples_ms:
            return tail(self.samples_ms)
        return self.p99_ms, "p99" if self.runs >= TAIL_FROM else f"p99 interpolated from {self.runs} runs"

    @property
    def throughput(self) -> float:
        """Items per second at the median latency (``batch_size`` items a run)."""
        return self.batch_size * 1000.0 / self.p50_ms if self.p50_ms > 0 else 0.0


@dataclasses.dataclass(frozen=True)
class PairedLatency:
    """The base commit's bundle timed beside this one: run i of the head, then run i of the base,
    per batch size, in one process on one machine (the reference figure on shared runners)."""

    base_bundle: str
    """The sha256 of the base bundle's model, so the pair is only compared with that base."""
    head: tuple[LatencyStat, ...]
    base: tuple[LatencyStat, ...]


@dataclasses.dataclass(frozen=True)
class ServingFigures:
    """What serving the model costs, measured in the target's environment (ci_onnx/observer/coldstart.py).

    The cold start is timed from the start of a fresh process to its first answer: importing the
    runtime and numpy, creating the session, one run; the warm median is the same process's next runs.
    Sizes are the installed files of the runtime's and numpy's distributions and the model's files.
    """

    cold_start_ms: float | None = None
    import_ms: float | None = None
    session_ms: float | None = None
    first_run_ms: float | None = None
    warm_median_ms: float | None = None
    warm_runs: int = 0
    batch_size: int = 0
    """The batch the fresh process answered (1 where the inputs have a batch axis)."""
    runtime_package: str = ""
    runtime_bytes: int | None = None
    numpy_bytes: int | None = None
    model_bytes: int | None = None
    env_bytes: int | None = None
    """runtime + numpy + model: the serving environment's size on disk."""


@dataclasses.dataclass(frozen=True)
class EnginePrecision:
    """What an engine that picks its own precision (OpenVINO) was set, what it took, and the nodes of
    its compiled graph that ran in another floating-point precision than asked."""

    asked: str
    """The precision asked of its floating-point nodes (``f32`` for an fp32 bundle, or the preset's)."""
    nodes: int
    """Computing nodes of the compiled graph (not inputs, outputs, constants or conversions)."""
    other_precision: tuple[PlacedNode, ...] = ()
    """Nodes that ran in another precision (``provider`` holds the device and the precision)."""
    set: dict[str, str] = dataclasses.field(default_factory=dict)
    """The preset's engine properties; empty: the engine's defaults."""
    effective: dict[str, str] = dataclasses.field(default_factory=dict)
    """The values the compiled model took (INFERENCE_PRECISION_HINT, PERFORMANCE_HINT, …)."""


@dataclasses.dataclass(frozen=True)
class Observation:
    """A runner's raw report for one target, before any verdict (written as observation.json)."""

    schema_version: int
    target_id: str
    environment: Environment | None
    load_error: str = ""
    outputs: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict)
    """test_data_set directory → output name → observed TensorProto file (relative path)."""
    batch_outputs: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict)
    """Served batch size (as a string) → output name → file holding the outputs at that batch size."""
    batch_errors: dict[str, str] = dataclasses.field(default_factory=dict)
    placement: Placement | None = None
    latency: tuple[LatencyStat, ...] = ()
    session_create_ms: float | None = None
    peak_rss_mb: float | None = None
    notes: tuple[str, ...] = ()
    providers_requested: tuple[str, ...] = ()
    """The providers the session was created with, in order (the target's first, CPU last)."""
    run_errors: dict[str, str] = dataclasses.field(default_factory=dict)
    """test_data_set directory → the runtime's message, where running that set failed."""
    batch_reference: dict[str, str] = dataclasses.field(default_factory=dict)
    """Output name → file holding the outputs of single (batch 1) runs of the first samples of
    test_data_set_0, concatenated: what each served batch size must reproduce."""
    batch_reference_error: str = ""
    strict_fallback_error: str = ""
    """With strict fallback: the runtime's refusal to create a session that falls back to CPU."""
    placement_error: str = ""
    memory_threads: int = 0
    """How many threads served the largest batch while peak RSS was measured."""
    rss_before_mb: float | None = None
    """RSS before the memory measurement (the session loaded, no thread serving yet)."""
    unmeasured: dict[str, str] = dataclasses.field(default_factory=dict)
    """What this runner could not measure (``placement``, ``memory``, ``latency``, ``batch``) → why;
    the judge skips the checks that need it with that reason instead of failing them."""
    serving: ServingFigures | None = None
    """Cold start, first run against warm runs, and sizes on disk; see ``unmeasured["cold_start"]``."""
    paired: PairedLatency | None = dataclasses.field(default=None, metadata=serde.OMIT_DEFAULT)
    """With a base bundle at hand (``--paired-model``): both timed interleaved."""
    paired_error: str = dataclasses.field(default="", metadata=serde.OMIT_DEFAULT)
    """Why the base bundle could not be timed beside this one (its inputs differ, it did not load)."""
    sweep_outputs: dict[str, dict[str, str]] = dataclasses.field(
        default_factory=dict, metadata=serde.OMIT_DEFAULT
    )
    """Sweep set directory (the manifest's ``sweep_sets``) → output name → observed TensorProto file."""
    sweep_errors: dict[str, str] = dataclasses.field(default_factory=dict, metadata=serde.OMIT_DEFAULT)
    """Sweep set directory → the runtime's message, where running that point failed."""
    sweep_latency: tuple[LatencyStat, ...] = dataclasses.field(default=(), metadata=serde.OMIT_DEFAULT)
    """Each sweep point that ran, timed (``point`` names it)."""
    engine_precision: EnginePrecision | None = dataclasses.field(default=None, metadata=serde.OMIT_DEFAULT)
    """From a kind whose engine picks its own precision: what it was set, took and ran (the
    ``engine-precision`` check)."""


@dataclasses.dataclass(frozen=True)
class CheckResult:
    """One check: of the export (a manifest's findings) or of one target; one JUnit testcase."""

    name: str
    status: Status
    message: str = ""
    figures: dict[str, Any] = dataclasses.field(default_factory=dict)
    duration_s: float = dataclasses.field(default=0.0, metadata=serde.OMIT_DEFAULT)
    """Seconds the check took where it was timed (a failed runner); left out of the JSON when 0."""
    warnings: tuple[str, ...] = dataclasses.field(default=(), kw_only=True, metadata=serde.OMIT_DEFAULT)
    """What the exporter or a converter warned (export checks); left out of the JSON when none."""


SQNR_CAP_DB = 200.0
"""The SQNR of an exact match (no noise), and the most any output reports: figures stay finite."""


@dataclasses.dataclass(frozen=True)
class OutputParity:
    output: str
    max_abs: float
    max_rel: float
    out_of_tolerance: int
    elements: int
    atol: float
    rtol: float
    nonfinite_mismatches: int = 0
    """Elements where NaN or ±Inf in one tensor met something else in the other (part of out_of_tolerance)."""
    shape_mismatch: str = ""
    worst_share: float | None = None
    """The worst finite element's |got − ref| / (atol + rtol·|ref|): the share of its own tolerance it
    used (above 1: out of tolerance). None where unknown (older results, no finite element)."""
    sqnr_db: float | None = None
    """10·log10(Σref² / Σ(got − ref)²) over all finite elements of all test data sets, capped at
    SQNR_CAP_DB (an exact match); None where unknown. Quantized outputs are judged by it."""
    cosine: float | None = None
    """The cosine similarity of got and ref, flattened over all test data sets; None where unknown."""

    @property
    def passed(self) -> bool:
        return self.out_of_tolerance == 0 and not self.shape_mismatch


@dataclasses.dataclass(frozen=True)
class DecisionStats:
    output: str
    top_k: int
    changed: int
    total: int


@dataclasses.dataclass(frozen=True)
class TargetResult:
    """The verdict for one target (written as results/<target-id>.json)."""

    schema_version: int
    target: Target
    status: Status
    summary: str
    """One line: why the target failed, errored or was skipped; empty when it passed."""
    checks: tuple[CheckResult, ...] = ()
    parity: tuple[OutputParity, ...] = ()
    decisions: DecisionStats | None = None
    observation: Observation | None = None
    """What the runner observed, as it wrote it: the evidence the checks were drawn from (its file
    names are relative to the observation's folder). None where nothing ran: an export or bundle
    error, a runner that died before writing it."""
    bundle: str = ""
    """The bundle's model sha256, so results from different exports are never compared."""
    started_at: str = ""
    duration_s: float = 0.0
    reproduce: str = ""
    """The command that reproduces this one target locally."""
    export_failed: bool = dataclasses.field(default=False, metadata=serde.OMIT_DEFAULT)
    """The bundle's export failed a check: every target of that bundle fails for that one reason
    (the report shows it once, under the bundle)."""
    triage: Triage | None = dataclasses.field(default=None, metadata=serde.OMIT_DEFAULT)
    """Where a failing parity or decision check first diverges and whose fault it is (ci_onnx.triage);
    left out of the JSON for a cell that was not triaged."""

    @property
    def observed(self) -> Observation:
        """The observation, or an empty one where nothing ran: every figure a reader asks of it is
        then "not observed" (None or empty) rather than an AttributeError."""
        return self.observation or Observation(SCHEMA_VERSION, self.target.id, None)

    def check(self, name: str) -> CheckResult | None:
        return next((c for c in self.checks if c.name == name), None)

    def ran_release(self) -> str:
        """The runtime release the runner reported, else the one the target asked for."""
        env = self.observed.environment
        return env.runtime_version if env is not None else self.target.runtime


def write_result(out_dir: Path, result: TargetResult) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{result.target.id}.json"
    path.write_text(serde.dumps(result))
    return path


def read_result(path: Path) -> TargetResult:
    """A TargetResult; a file that is not one, or of a schema version this onnx-gate does not read,
    is a UsageError naming the file (never another exception)."""
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError) as exc:
        raise UsageError(f"{path}: not a TargetResult written by onnx-gate ({_short(exc)})") from None
    version = data.get("schema_version") if isinstance(data, dict) else None
    version_1 = type(version) is int and version == 1  # 1.0 and True are not version 1
    if not version_1:
        check_schema_version(data, RESULT_SCHEMA_VERSION, path, "TargetResult")
    try:
        return serde.from_json(TargetResult, _from_version_1(data) if version_1 else data)
    except (ValueError, TypeError, KeyError, RecursionError) as exc:
        raise UsageError(f"{path}: not a TargetResult written by onnx-gate ({_short(exc)})") from None


_VERSION_1_OBSERVED = (
    "environment",
    "placement",
    "latency",
    "session_create_ms",
    "peak_rss_mb",
    "serving",
    "paired",
    "sweep_latency",
)
"""The figures a version 1 TargetResult copied from its observation, under the observation's names."""


def _from_version_1(data: dict[str, Any]) -> dict[str, Any]:
    """A version 1 result as version 2: its copied figures become the observation they came from
    (absent where the result carried none of them: nothing ran). A baseline written before the
    change is then compared like any other, figure for figure."""
    data = dict(data)
    observed = {k: data.pop(k) for k in _VERSION_1_OBSERVED if k in data}
    if any(v not in (None, []) for v in observed.values()):
        target_id = serde.from_json(Target, data.get("target")).id
        data["observation"] = {"schema_version": SCHEMA_VERSION, "target_id": target_id, **observed}
    data["schema_version"] = RESULT_SCHEMA_VERSION
    return data


def check_schema_version(data: Any, supported: int, path: Path, what: str) -> None:
    """The one check of a contract file's ``schema_version``: present, an integer, one we read."""
    version = data.get("schema_version") if isinstance(data, dict) else None
    if isinstance(version, bool) or not isinstance(version, int):
        raise UsageError(f"{path}: not a {what} written by onnx-gate (no integer schema_version)")
    if version != supported:
        hint = "upgrade onnx-gate" if version > supported else "re-run the job that wrote it"
        raise UsageError(
            f"{path}: {what} schema_version {version} is not the one this onnx-gate reads "
            f"({supported}); {hint}"
        )


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 200 else text[:199] + "…"
