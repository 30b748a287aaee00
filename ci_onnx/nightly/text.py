"""The tracking issue's title, body and comments: a view built here, laid out by templates.

The body reuses the report's pieces: the family's rows come from ``ci_onnx.report.view.build`` and the
parity and CPU-fallback tables from ``_tables.md.j2``, so an issue reads like the PR comment.
"""

from __future__ import annotations

import dataclasses

from ci_onnx.contracts.target import Status
from ci_onnx.nightly.families import FamilyNight
from ci_onnx.nightly.state import TrackState, embed
from ci_onnx.report import gate, limits, render, view
from ci_onnx.report.collect import Collection
from ci_onnx.report.model import Commit, Failure, FallbackRow, LatencyTable, ParityRow, ReportView


@dataclasses.dataclass(frozen=True)
class Night:
    """The run the texts speak of."""

    date: str
    run_url: str = ""
    commit: Commit = dataclasses.field(default_factory=Commit)


@dataclasses.dataclass(frozen=True)
class IssueView:
    """What the nightly templates show; also quacks like a ReportView for the shared table macros."""

    family: str
    package: str
    spec: str
    marker: str
    state_comment: str
    state: TrackState
    night: Night
    report: ReportView
    failing: tuple[str, ...]
    """The releases that failed tonight, oldest first."""
    passing: tuple[str, ...]
    verified: tuple[str, ...]
    """Every release of the family verified tonight, oldest first."""
    reproduce_first_bad: str
    baseline: str = ""

    @property
    def parity(self) -> tuple[ParityRow, ...]:
        return self.report.parity

    @property
    def fallback(self) -> tuple[FallbackRow, ...]:
        return self.report.fallback

    @property
    def latency(self) -> LatencyTable:
        return self.report.latency

    @property
    def failures(self) -> tuple[Failure, ...]:
        return self.report.failures

    @property
    def run_url(self) -> str:
        return self.night.run_url

    @property
    def report_file(self) -> str:
        return "the nightly run's job summary"


def issue_view(fam: FamilyNight, state: TrackState, night: Night) -> IssueView:
    entries = Collection(fam.entries)
    decided = gate.decide(entries, mode=gate.Mode.ABSOLUTE, why="the nightly judges absolutely")
    family_view = view.build(entries, decided, commit=night.commit, run_url=night.run_url)
    first_bad = next((e for e in fam.entries if e.target.runtime == state.first_bad), fam.failing[0])
    target = dataclasses.replace(first_bad.target, runtime=state.first_bad)
    return IssueView(
        family=fam.key.id,
        package=fam.key.package,
        spec=fam.key.spec,
        marker=fam.key.marker,
        state_comment=embed(state),
        state=state,
        night=night,
        report=family_view,
        failing=tuple(e.target.runtime for e in fam.failing),
        passing=tuple(e.target.runtime for e in fam.entries if e.outcome is Status.PASSED),
        verified=tuple(e.target.runtime for e in fam.entries),
        reproduce_first_bad=(
            f"onnx-gate verify --bundle onnx-gate-out/bundles/{target.bundle_key} --target {target.id}"
        ),
    )


def title(v: IssueView) -> str:
    return f"onnx-gate nightly: {v.family} fails on {v.package} {', '.join(v.failing)}"


def body(v: IssueView) -> str:
    return render.render_within(v, limits.COMMENT, template="nightly-issue.md.j2", marker=v.marker)


def repeat_comment(v: IssueView) -> str:
    return render.render(v, template="nightly-comment.md.j2", marker="")


def close_comment(fam: FamilyNight, night: Night) -> str:
    passing = ", ".join(e.target.runtime for e in fam.entries if e.outcome is Status.PASSED)
    run = f" ([workflow run]({night.run_url}))" if night.run_url else ""
    return (
        f"✅ `{fam.key.id}` passes again on {fam.key.package} {passing}, the night of {night.date}{run}. "
        "Closing; onnx-gate opens a new issue if it breaks again.\n"
    )
