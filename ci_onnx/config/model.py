"""The typed onnx-gate.yml of one model: what ci_onnx.config.load returns (frozen).

Read and validated by ci_onnx/config/validate.py, built from the effective values by
ci_onnx/config/assemble.py; every key and default is declared once, in the config schema."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from ci_onnx.contracts import defaults
from ci_onnx.contracts.bundle import Decision, Preprocessing, TensorSpec, Tolerance
from ci_onnx.contracts.gate_settings import GateSettings
from ci_onnx.contracts.verify_options import Budgets


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    name: str
    id: str = ""
    """The name that goes into target ids and bundle names: the model's name in a ``models``
    config, empty for the single ``model`` form (whose ids carry no name, as they always did)."""
    factory: str = ""
    onnx: str = ""
    test_data: str = ""
    inputs: tuple[TensorSpec, ...] = ()
    outputs: tuple[str, ...] = ()
    dynamic_axes: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict)
    samples: str = ""
    preprocessing: Preprocessing | None = None
    dim_sizes: dict[str, int] = dataclasses.field(default_factory=dict)
    """Sizes of symbolic dims other than the batch axis, for the example and random inputs."""
    dim_max: dict[str, int] = dataclasses.field(default_factory=dict)
    """model.dim_max: the largest size of a symbolic dim, the bound of its sweep."""
    depends_on: tuple[str, ...] = ()
    """model.depends_on: globs of files the export reads unseen (a subprocess's); in its key."""
    env: tuple[str, ...] = ()
    """model.env: variables the factory reads; the sha256 of each value is in its key."""


@dataclasses.dataclass(frozen=True)
class ExportConfig:
    opsets: tuple[int, ...]
    exporters: tuple[str, ...]
    precisions: tuple[str, ...]
    timeout_s: float
    calibration: str = ""
    """The calibration set of int8-static (default: model.samples)."""
    cache: bool = True
    """``onnx-gate run`` reuses bundles whose inputs did not change (ci_onnx/export/cache.py)."""


@dataclasses.dataclass(frozen=True)
class VerifyConfig:
    random_inputs: int
    seed: int
    tolerance: Tolerance
    tolerance_per_output: dict[str, Tolerance]
    decision: Decision | None
    batch_sizes: tuple[int, ...]
    timeout_s: float
    strict_fallback: bool
    latency_runs: int
    serving_figures: bool = True
    """verify.serving_figures: time a cold start and probe the optimized-model cache per target."""
    triage_timeout_s: float = 300.0
    """verify.triage_timeout_s: how long the triage of one failing cell may take; 0 turns it off."""
    triage_memory_mb: float = 1024.0
    """verify.triage_memory_mb: the memory a triage may hold for the values it compares."""
    triage_disk_mb: float = 1024.0
    """verify.triage_disk_mb: the temporary disk a triage may write for the target's values."""
    precision_tolerance: dict[str, tuple[Tolerance, dict[str, Tolerance]]] = dataclasses.field(
        default_factory=dict
    )
    """Per derived precision (fp16, int8-dynamic, int8-static): its default and per-output tolerances."""
    batch_sizes_declared: bool = False
    """Whether onnx-gate.yml writes verify.batch_sizes (a claim: a size the model cannot serve fails),
    rather than taking the schema's default (such a size is skipped, saying why)."""
    sweeps: dict[str, tuple[int, ...]] = dataclasses.field(default_factory=dict)
    """verify.sweeps: a dynamic dim → the sizes to check and time it at; a dim left out gets the
    default points (ci_onnx.export.sweep.timed_points)."""


@dataclasses.dataclass(frozen=True)
class TargetsConfig:
    runtimes: tuple[str, ...]
    providers: tuple[str, ...]
    include: tuple[dict[str, str], ...]
    exclude: tuple[dict[str, str], ...]
    nightly_index: str = ""
    runners: tuple[str, ...] = ("python",)
    """Runner kinds (keys of matrix/runners.toml), each a matrix axis of its own cells."""
    session_options: tuple[str, ...] = ("default",)
    """Session-options presets (matrix/session_options.toml or session_presets): an axis."""
    session_presets: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    engine_presets: dict[str, dict[str, dict[str, str]]] = dataclasses.field(default_factory=dict)
    """targets.engine_presets: kind → name → the engine's properties, beside the kind's own presets."""
    android_api_level: int = 34
    """targets.android.api_level: the Android API level the android runner's cells run at."""


@dataclasses.dataclass(frozen=True)
class CiConfig:
    """ci: how the generated workflows split the verify work over jobs (ci_onnx/plan/cijobs.py)."""

    max_job_minutes: float = float(defaults.of("ci.max_job_minutes"))
    max_cells_per_job: int = int(defaults.of("ci.max_cells_per_job"))
    """0: the estimate decides; else at most this many cells in one job, in place of the estimate."""
    export: str = str(defaults.of("ci.export"))
    """auto, plan or jobs: where the bundles are exported (ci_onnx/plan/cijobs.py export_layout)."""


@dataclasses.dataclass(frozen=True)
class Config:
    path: Path
    model: ModelConfig
    export: ExportConfig
    verify: VerifyConfig
    targets: TargetsConfig
    cpu_fallback_max_time_share: float
    accuracy_drop: float = 1.0
    """budgets.accuracy_drop: top-1 points a cell may lose against PyTorch on labelled samples."""
    budgets: Budgets = dataclasses.field(default_factory=Budgets)
    """Serving budgets (cold start, peak RSS, p99) a cell must stay within; none by default."""
    ci: CiConfig = dataclasses.field(default_factory=CiConfig)
    gate: GateSettings = dataclasses.field(default_factory=GateSettings)
    """``gate`` and ``expected_failures``: the mode, the ledger, the comparison's thresholds."""
    model_file: Path | None = None
    """The file that declares this model, where it is not ``path`` (a file ``include`` named)."""
    model_keys: tuple[str, ...] = ("model",)
    """Where the model's own keys are in that file: ``model``, or its block in ``models``."""

    @property
    def root(self) -> Path:
        """Relative paths in the model's keys are relative to the directory of the file that
        declares the model (``path``, or the included file)."""
        return (self.model_file or self.path).parent

    def resolve(self, relative: str) -> Path:
        return (self.root / relative).resolve()

    @property
    def onnx_only(self) -> bool:
        return bool(self.model.onnx)
