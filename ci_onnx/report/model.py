"""The view model's types: every figure of the report, already judged and formatted.

Rows are keyed by target id; with a baseline each carries its ``delta`` against the base (the
"vs base" column, shown once ``ReportView.baseline`` is set) and ``ReportView.comparison`` holds the
regressions, the placement and the serving diffs.
"""

from __future__ import annotations

import dataclasses

from ci_onnx.report.charts import Chart
from ci_onnx.report.junit_reader import JUnitSummary
from ci_onnx.report.profile import ProfileRow
from ci_onnx.report.triage import TriageRow


@dataclasses.dataclass(frozen=True)
class Commit:
    sha: str = ""
    url: str = ""

    @property
    def short(self) -> str:
        return self.sha[:7]


@dataclasses.dataclass(frozen=True)
class ParityRow:
    """One output of one target: its worst differences, the tolerance they were judged by, and how
    many elements fell outside it (an element passes when |a - b| ≤ atol + rtol·|b|, so a large max
    rel is no violation where atol covered it)."""

    target: str
    runtime: str
    provider: str
    opset: int
    exporter: str
    output: str
    max_abs: str
    max_rel: str
    tolerance: str
    outside: str
    worst: str
    """The worst element's share of its own tolerance, e.g. "41 %" (over 100 %: out of tolerance)."""
    decisions: str
    verdict: str
    failed: bool
    delta: str = ""
    error: str = "—"
    """SQNR and cosine similarity over all elements, e.g. "38.2 dB, 0.99993": the figures that judge
    a quantized output, where max abs is set by one element."""


@dataclasses.dataclass(frozen=True)
class FallbackRow:
    target: str
    provider: str
    on_provider: int
    on_cpu: int
    cpu_share: str
    ops: str
    verdict: str
    failed: bool
    delta: str = ""


@dataclasses.dataclass(frozen=True)
class LatencyRow:
    target: str
    cells: tuple[str, ...]
    """One "p50 / p90" per batch size of LatencyTable.batch_sizes; "—" where not measured."""
    failed: bool
    delta: str = ""
    session: str = "—"
    """Session creation, ms."""
    peak_rss: str = "—"
    """Peak resident memory of the runtime's process, MB."""


@dataclasses.dataclass(frozen=True)
class LatencyTable:
    batch_sizes: tuple[int, ...]
    rows: tuple[LatencyRow, ...]


@dataclasses.dataclass(frozen=True)
class PrecisionRow:
    """One precision of one cell beside its fp32 cell: file size, latency, top-1 accuracy."""

    target: str
    precision: str
    size: str
    latency: str
    accuracy: str
    vs_fp32: str
    vs_pytorch: str
    failed: bool
    delta: str = ""


@dataclasses.dataclass(frozen=True)
class ServingRow:
    """The serving figures of one target (ci_onnx/observer/coldstart.py), formatted."""

    target: str
    cold_start: str
    """Process start to first answer, ms, with its import / session / first-run parts."""
    first_vs_warm: str
    env_size: str
    """runtime + numpy + model on disk, MB."""
    model_size: str
    budgets: str
    """The budgets.* checks: ✅ within, ❌ over by how much, or —."""
    failed: bool
    delta: str = ""


@dataclasses.dataclass(frozen=True)
class AccuracyRow:
    """Top-1 of one target on the labelled samples, beside PyTorch's (ci_onnx/verify/accuracy.py)."""

    target: str
    output: str
    samples: int
    top1: str
    pytorch: str
    change: str
    verdict: str


@dataclasses.dataclass(frozen=True)
class FailedCheck:
    name: str
    status: str
    message: str
    figures: str
    url: str = ""
    """The check's page on the documentation site: what it compares and what to change."""


@dataclasses.dataclass(frozen=True)
class Failure:
    target: str
    icon: str
    outcome: str
    reason: str
    checks: tuple[FailedCheck, ...]
    reproduce: str
    affects: tuple[str, ...] = ()
    """For a bundle whose export failed: the targets it fails, shown once under the bundle."""
    standing: str = ""
    """The gate's word on it: why it blocks, or why not (known on the base, expected until …)."""
    url: str = ""
    """The page of the first failing check (of ``missing`` for a target that never reported): where
    a reader starts."""


@dataclasses.dataclass(frozen=True)
class Skip:
    target: str
    reason: str


@dataclasses.dataclass(frozen=True)
class Counts:
    total: int
    passed: int
    failed: int
    error: int
    missing: int
    expected: int
    skipped: int

    @property
    def judged(self) -> int:
        """The targets that were to run: everything but expected skips."""
        return self.total - self.expected


@dataclasses.dataclass(frozen=True)
class Overview:
    """The plan at a glance: one row per runtime and provider, one column per bundle (opset ×
    exporter), an icon per cell (✅ ❌ 💥 ⚠️ ⏭️, "·" where the plan has no such cell)."""

    columns: tuple[str, ...]
    rows: tuple[tuple[str, tuple[str, ...]], ...]


@dataclasses.dataclass(frozen=True)
class Regression:
    """One row of the regressions table: a check that newly fails, or a serving figure past its
    noise rule."""

    target: str
    check: str
    base: str
    head: str
    figure: str


@dataclasses.dataclass(frozen=True)
class DiffRow:
    """One figure that changed against the base (serving, placement, parity drift)."""

    target: str
    what: str
    base: str
    head: str
    change: str
    verdict: str
    """❌ regression (blocks), ⚠️ warning, ✅ improved, or "within noise"."""
    test: str = ""


@dataclasses.dataclass(frozen=True)
class Comparison:
    regressions: tuple[Regression, ...]
    fixed: tuple[str, ...]
    new: tuple[str, ...]
    removed: tuple[str, ...]
    placement: tuple[DiffRow, ...]
    serving: tuple[DiffRow, ...]
    """Every serving figure that moved past its rule, either way; the rest are counted."""
    serving_unchanged: int
    drift: tuple[DiffRow, ...]
    tests: tuple[str, ...]
    """How the serving figures were compared (side by side, or against stored figures)."""
    not_compared: tuple[str, ...] = ()
    """Targets whose serving figures were not judged against the base: the same model bytes,
    runtime and providers (ci_onnx/report/diff.py ``identical``)."""
    not_compared_why: str = ""


@dataclasses.dataclass(frozen=True)
class ModelSection:
    """One model of a ``models`` config: its line in the summary, and its own per-target tables
    (folded into <details> where every target passed)."""

    model: str
    icon: str
    line: str
    """What the gate found for this model: ``all 3 targets passed``, ``1 of 2 targets failed
    (parity)``, ``unchanged since 4f1d2c3, not re-run; all 2 targets passed``."""
    folded: bool
    parity: tuple[ParityRow, ...] = ()
    precisions: tuple[PrecisionRow, ...] = ()
    fallback: tuple[FallbackRow, ...] = ()
    latency: LatencyTable = LatencyTable((), ())
    accuracy: tuple[AccuracyRow, ...] = ()
    serving: tuple[ServingRow, ...] = ()


@dataclasses.dataclass(frozen=True)
class ReportView:
    title: str
    headline: str
    blocks: bool
    counts: Counts
    commit: Commit
    run_url: str
    failures: tuple[Failure, ...]
    problems: tuple[str, ...]
    parity: tuple[ParityRow, ...]
    fallback: tuple[FallbackRow, ...]
    latency: LatencyTable
    skips: tuple[Skip, ...]
    junit: JUnitSummary | None = None
    baseline: str = ""
    """The base commit the rows are compared with; empty without a baseline."""
    report_file: str = "report.md"
    """Where the full report is written; what a truncated body points to."""
    overview: Overview | None = None
    """Shown at the top of large plans."""
    precisions: tuple[PrecisionRow, ...] = ()
    """Each derived precision beside its fp32 cell (ci_onnx/report/precisions.py); empty with one."""
    serving: tuple[ServingRow, ...] = ()
    """Cold start, first run against warm runs, sizes on disk: one row per target that has them."""
    reused: tuple[str, ...] = ()
    """Bundles this run took from the export cache instead of exporting ("op17-dynamo (key …)")."""
    bindings: tuple[str, ...] = ()
    """Per bundle whose inputs are not each forward's parameter of their name: how they are bound."""
    accuracy: tuple[AccuracyRow, ...] = ()
    """Top-1 on the labelled samples, one row per target with an accuracy check."""
    known: tuple[Failure, ...] = ()
    """Failures that do not block: known on the base (regression mode) or expected by the ledger."""
    judged_by: str = ""
    """The mode and the baseline, in one line: "regression mode (a pull request with a baseline),
    compared with 4f1d2c3 (the artifact of run 7001 on main)"."""
    policy: tuple[str, ...] = ()
    """The policy changes of the pull request, one line each (ci_onnx/report/policy.py)."""
    ledger: tuple[str, ...] = ()
    """Expired and stale expected_failures entries, and base result files that could not be read
    (they do not block the head), one line each."""
    comparison: Comparison | None = None
    """With a baseline: what changed."""
    triage: tuple[TriageRow, ...] = ()
    """One line per triaged failing cell: where it first diverges and whose fault it is (ci_onnx.triage)."""
    profile: tuple[ProfileRow, ...] = ()
    """The serving profile: per target, each batch size and sweep point timed (ci_onnx/report/profile.py)."""
    knees: tuple[str, ...] = ()
    """Per target: where its throughput stops growing over the batch sizes."""
    charts: tuple[Chart, ...] = ()
    """Latency and throughput against batch size and each swept dim (ci_onnx/report/charts.py)."""
    models: tuple[ModelSection, ...] = ()
    """Per model of a ``models`` config (empty for the single ``model`` form): a summary line, and the
    tables above split by model."""
