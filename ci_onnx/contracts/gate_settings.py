"""What onnx-gate.yml says about the gate itself: its mode, the expected-failure ledger, thresholds.

They travel in the plan (``Plan.gate``), so the report job of a workflow judges by the config's
settings without checking out the repository, as the verify jobs do with ``Plan.verify``.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum

from ci_onnx.contracts import defaults


class Mode(enum.StrEnum):
    """How the gate judges: what a pull request changed, or every failure."""

    REGRESSION = "regression"
    """Block on what changed against the baseline: new failures, serving regressions."""
    ABSOLUTE = "absolute"
    """Every failure blocks (the default branch, the nightly, and any run without a baseline)."""


@dataclasses.dataclass(frozen=True)
class ExpectedFailure:
    """One entry of ``expected_failures``: failures that are known, explained and dated."""

    select: str
    """A glob over target ids (``ort1.2*-webgpu-*``)."""
    check: str
    """A check name or a glob over check names (``parity[*]``, ``fallback``)."""
    reason: str
    until: str
    """YYYY-MM-DD: the last day the entry holds; after it the failure blocks again and says why."""
    link: str = ""
    index: int = 0
    """Its position in the list, so that every message can name ``expected_failures[i]``."""
    where: str = ""
    """The key of an entry of a model's own list (``models.minilm.expected_failures[0]``)."""

    @property
    def key(self) -> str:
        return self.where or f"expected_failures[{self.index}]"

    def expired(self, today: datetime.date) -> bool:
        return datetime.date.fromisoformat(self.until) < today


@dataclasses.dataclass(frozen=True)
class ServingRule:
    """When a serving figure counts as a regression: a relative threshold on the ratio head / base
    and, for a figure with timed samples, a one-sided rank test at level ``p``."""

    threshold: float
    """The smallest relative growth that counts (0.10 = 10 %); for timed samples, the one used side
    by side (base and head timed interleaved in one process)."""
    p: float | None = None
    """The rank test's level (timed samples only)."""
    stored_threshold: float | None = None
    """Timed samples against figures stored by another run (another machine, another hour): the
    wider threshold."""


SAMPLED = ("p50", "tail")
"""Figures with timed samples: the median and the tail latency per served batch size (the tail is
the p99 where 100 or more runs were timed, else, honestly named, the maximum)."""
SINGLE = ("cold_start", "peak_rss", "model_size")
"""Figures measured once a side: the cold start, the peak resident memory, the model's size."""
FIGURES = (*SAMPLED, *SINGLE)


def _rule(figure: str) -> ServingRule:
    key = f"gate.serving.{figure}"
    if figure in SAMPLED:
        return ServingRule(
            float(defaults.of(f"{key}.threshold")),
            float(defaults.of(f"{key}.p")),
            float(defaults.of(f"{key}.stored_threshold")),
        )
    return ServingRule(float(defaults.of(f"{key}.threshold")))


def default_rules() -> dict[str, ServingRule]:
    return {figure: _rule(figure) for figure in FIGURES}


@dataclasses.dataclass(frozen=True)
class GateSettings:
    mode: str = ""
    """``regression``, ``absolute``, or "" to let the event choose (see ci_onnx.report.gate.choose)."""
    expected_failures: tuple[ExpectedFailure, ...] = ()
    parity_drift: float = dataclasses.field(default_factory=lambda: float(defaults.of("gate.parity_drift")))
    """A passing output whose worst element's share of its tolerance grew by more than this (in
    shares: 0.25 is a quarter of the tolerance) is a warning."""
    serving: dict[str, ServingRule] = dataclasses.field(default_factory=default_rules)
    stored_figures: str = dataclasses.field(default_factory=lambda: str(defaults.of("gate.stored_figures")))
    """``warn`` or ``block``: what a latency past its threshold against stored figures does."""
    approval_label: str = ""
    """A label that, applied by a writer who is not the author, lets a pull request's policy
    loosenings apply before they are merged ("": none can)."""
    fork_results: str = dataclasses.field(default_factory=lambda: str(defaults.of("gate.fork_results")))
    """``block`` or ``accept``: what a fork's own result for a cell the trusted job could not verify
    again counts for (ci_onnx/verify/reverify.py)."""
    docs_url: str = dataclasses.field(default_factory=lambda: str(defaults.of("gate.docs_url")))
    """The site whose ``checks/<family>/`` pages the report links each failing check to."""
