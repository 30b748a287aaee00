"""Run settings and budgets of the verify stage: a contract between plan, runners and the judge.

On the ground floor (it needs only the schema's defaults), so that the plan can carry them, the
runners can read them and the judge can apply them without any of them importing another's stage.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from ci_onnx.contracts import defaults, serde

if TYPE_CHECKING:
    from ci_onnx.config import Config


def _from_config(key: str, kind: type) -> Any:
    """A field whose default is onnx-gate.yml's ``key`` (the config schema declares it)."""
    return dataclasses.field(default=kind(defaults.of(key)), metadata={"config": key})


EVERY_BATCH = "*"
"""The key of a :class:`PerBatch` budget that holds one budget for every batch size."""

T = TypeVar("T")


class PerBatch(dict[str, float]):
    """A budget as onnx-gate.yml gives it: one number for every batch size (held under the key
    ``*``), or a map of batch sizes (``8``), or sweep points (``seq=64``), to numbers; empty: not set.
    A dict, so it travels in the plan JSON as one."""

    @classmethod
    def parse(cls, value: float | Mapping[Any, float] | None) -> PerBatch:
        """From the (schema-validated) config value: a number, a map, or nothing."""
        if value is None:
            return cls()
        if isinstance(value, Mapping):
            return cls({str(k): float(v) for k, v in value.items()})
        return cls({EVERY_BATCH: float(value)})

    def at(self, key: str) -> float | None:
        """The budget of ``key``: its own, else the one for every key; None where neither is set."""
        return self.get(key, self.get(EVERY_BATCH))

    def against(self, timed: Mapping[str, T]) -> tuple[list[tuple[str, T, float]], list[str]]:
        """Each timed key with its figure and budget (every timed key, in ``timed``'s order, where one
        budget serves all; else, in this budget's order, the keys it names that were timed), and the
        keys it names that were not timed."""
        if EVERY_BATCH in self:
            pairs = [(k, figure, self[EVERY_BATCH]) for k, figure in timed.items()]
        else:
            pairs = [(k, timed[k], budget) for k, budget in self.items() if k in timed]
        return pairs, [k for k in self if k != EVERY_BATCH and k not in timed]


@dataclasses.dataclass(frozen=True)
class Budgets:
    """Serving budgets from ``budgets:`` in onnx-gate.yml; a budget left out is not checked."""

    cold_start_ms: float | None = None
    peak_rss_mb: float | None = None
    p99_ms: PerBatch = dataclasses.field(default_factory=PerBatch)
    """Batch size (as a string, or ``*`` for every one) → the p99 latency allowed, in ms."""
    min_throughput: PerBatch = dataclasses.field(default_factory=PerBatch)
    """A batch size (``8``), a sweep point (``seq=64``) or ``*`` for every one → the fewest items per
    second allowed."""

    def __post_init__(self) -> None:  # a plain map (the plan JSON's, a caller's) is one too
        for name in ("p99_ms", "min_throughput"):
            if not isinstance(getattr(self, name), PerBatch):
                object.__setattr__(self, name, PerBatch(getattr(self, name)))

    @staticmethod
    def from_config(section: Mapping[str, Any]) -> Budgets:
        """From the (schema-validated) ``budgets`` section."""
        cold, rss = section.get("cold_start_ms"), section.get("peak_rss_mb")
        return Budgets(
            cold_start_ms=float(cold) if cold is not None else None,
            peak_rss_mb=float(rss) if rss is not None else None,
            p99_ms=PerBatch.parse(section.get("p99_ms")),
            min_throughput=PerBatch.parse(section.get("min_throughput")),
        )


@dataclasses.dataclass(frozen=True)
class VerifyOptions:
    """What the config (or the schema's defaults) adds to what the bundle's manifest says."""

    max_cpu_time_share: float = _from_config("budgets.cpu_fallback.max_time_share", float)
    strict_fallback: bool = _from_config("verify.strict_fallback", bool)
    latency_runs: int = _from_config("verify.latency_runs", int)
    serving_figures: bool = _from_config("verify.serving_figures", bool)
    timeout_s: float = _from_config("verify.timeout_s", float)
    accuracy_drop: float = _from_config("budgets.accuracy_drop", float)
    """budgets.accuracy_drop, in absolute top-1 points against PyTorch (labelled samples only)."""
    session_presets: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    """targets.session_presets: the config's own presets, so a runner can apply one from the plan."""
    engine_presets: dict[str, dict[str, dict[str, str]]] | None = dataclasses.field(
        default=None, metadata=serde.OMIT_DEFAULT
    )
    """targets.engine_presets: the config's own presets of an engine kind (openvino), likewise; None
    (left out of the JSON) when there are none, so a plan's fingerprint is what it was before the
    key existed (serde omits a default, and a default_factory's is not one it compares)."""
    budgets: Budgets = dataclasses.field(default_factory=Budgets)
    declared_batch_sizes: tuple[int, ...] = ()
    """The batch sizes onnx-gate.yml writes itself (verify.batch_sizes, not the default): claims, so a
    size a fixed batch axis cannot take fails ``batch[N]`` instead of being skipped."""
    paired_bundles: str = ""
    """A run's own setting, never the config's: the base commit's bundles directory, so a runner
    that can times each target's base bundle beside its own (``--baseline``, ``--baseline-ref``)."""
    triage_timeout_s: float = _from_config("verify.triage_timeout_s", float)
    """How long the triage of one failing parity or decision cell may take; 0: no triage."""
    triage_memory_mb: float = _from_config("verify.triage_memory_mb", float)
    triage_disk_mb: float = _from_config("verify.triage_disk_mb", float)
    triage_config: str = ""
    """The onnx-gate.yml whose model.factory the triage may run as its PyTorch reference, where torch
    is installed; empty: no PyTorch reference beyond the bundle's outputs."""


def options_from(cfg: Config | None, *, timeout_s: float | None = None) -> VerifyOptions:
    """Budgets and run settings from onnx-gate.yml when given, else the config schema's defaults."""
    if cfg is not None:
        opts = VerifyOptions(
            max_cpu_time_share=cfg.cpu_fallback_max_time_share,
            strict_fallback=cfg.verify.strict_fallback,
            latency_runs=cfg.verify.latency_runs,
            serving_figures=cfg.verify.serving_figures,
            timeout_s=cfg.verify.timeout_s,
            accuracy_drop=cfg.accuracy_drop,
            session_presets=cfg.targets.session_presets,
            engine_presets=cfg.targets.engine_presets or None,
            budgets=cfg.budgets,
            declared_batch_sizes=cfg.verify.batch_sizes if cfg.verify.batch_sizes_declared else (),
            triage_timeout_s=cfg.verify.triage_timeout_s,
            triage_memory_mb=cfg.verify.triage_memory_mb,
            triage_disk_mb=cfg.verify.triage_disk_mb,
            triage_config=str(cfg.path) if cfg.model.factory else "",
        )
    else:
        opts = VerifyOptions()  # its defaults are the config schema's
    return dataclasses.replace(opts, timeout_s=timeout_s) if timeout_s else opts
