"""The renderings kept as golden files, by file name; shared by the golden test and tests.golden.regen."""

from __future__ import annotations

from ci_onnx.report import gate, limits, render, view
from ci_onnx.report.collect import Collection, merge
from ci_onnx.report.junit_reader import JUnitCase, JUnitSummary
from tests.golden import scenarios
from tests.support.results import observed

COMMIT = view.Commit(
    "4f1d2c3b9a8e7f6d5c4b3a29180706f5e4d3c2b1",
    "https://github.com/acme/digits/commit/4f1d2c3b9a8e7f6d5c4b3a29180706f5e4d3c2b1",
)
RUN_URL = "https://github.com/acme/digits/actions/runs/7001"


def _view(
    collection: Collection, *, junit: JUnitSummary | None = None, commit: view.Commit, run_url: str
) -> view.ReportView:
    """The view as `onnx-gate report` builds it: the gate decides, the view shows."""
    decided = gate.decide(collection, junit_failed=junit.failed + junit.errors if junit else 0)
    return view.build(collection, decided, junit=junit, commit=commit, run_url=run_url)


def tinycnn_view() -> view.ReportView:
    plan, results = scenarios.tinycnn()
    return _view(merge({r.target.id: r for r in results}, plan), commit=COMMIT, run_url=RUN_URL)


def missing_view() -> view.ReportView:
    plan, results = scenarios.all_passing()
    results = scenarios.without(results, "ort1.32.0-cpu-op18-dynamo")
    results = [
        scenarios.errored(r, "onnxruntime crashed with SIGSEGV while creating the session")
        if r.target.id == "ort1.24.1-openvino-op17-dynamo"
        else r
        for r in results
    ]
    junit = JUnitSummary(
        files=1,
        suites=1,
        cases=(
            JUnitCase("pytest.xml", "tests", "tests.test_preprocessing", "test_mean", "success"),
            JUnitCase(
                "pytest.xml", "tests", "tests.test_preprocessing", "test_std", "failure", "assert 6.1 == 6.02"
            ),
        ),
    )
    return _view(merge({r.target.id: r for r in results}, plan), junit=junit, commit=COMMIT, run_url="")


def passing_view() -> view.ReportView:
    plan, results = scenarios.all_passing()
    return _view(merge({r.target.id: r for r in results}, plan), commit=COMMIT, run_url=RUN_URL)


def export_failed_view() -> view.ReportView:
    """A bundle whose opset check failed (shown once for its targets), a target whose max rel is
    large where atol covered it, figures that hold a list, and a skip reason with "<="."""
    import dataclasses

    from ci_onnx.contracts.results import CheckResult
    from ci_onnx.contracts.target import Status

    plan, results = scenarios.all_passing()
    opset = CheckResult(
        "opset",
        Status.FAILED,
        "asked for opset 17 but the file is at opset 18",
        {"requested": 17, "written": 18},
    )
    changed = []
    for r in results:
        if r.target.bundle_key == "op17-dynamo":
            r = dataclasses.replace(
                r,
                status=Status.FAILED,
                summary="export failed upstream: opset: asked for opset 17 but the file is at opset 18",
                export_failed=True,
                checks=(CheckResult("export", Status.PASSED), opset),
                parity=(),
                decisions=None,
                observation=None,
            )
        elif r.target.id == "ort1.24.1-openvino-op18-dynamo":
            covered = dataclasses.replace(r.parity[0], max_abs=5.1e-5, max_rel=0.0102, worst_share=0.52)
            nodes = CheckResult(
                "fallback",
                Status.FAILED,
                "2 nodes fell back",
                {"fallback_nodes": [{"name": "n1"}, {"name": "n2"}]},
            )
            r = dataclasses.replace(
                r, parity=(covered,), status=Status.FAILED, summary="fallback: 2 nodes fell back",
                checks=(*r.checks, nodes),
            )  # fmt: skip
        changed.append(r)
    skips = tuple(
        dataclasses.replace(
            t, expected_skip="onnxruntime 1.17 loads opset <= 20; opset 21 needs onnxruntime >= 1.18"
        )
        if t.expected_skip
        else t
        for t in plan.targets
    )
    plan = dataclasses.replace(plan, targets=skips)
    return _view(merge({r.target.id: r for r in changed}, plan), commit=COMMIT, run_url=RUN_URL)


def many_view(n: int = 256) -> view.ReportView:
    plan, results = scenarios.many(n)
    return _view(merge({r.target.id: r for r in results}, plan), commit=COMMIT, run_url=RUN_URL)


BASE = "9e8d7c6b5a49382716f5e4d3c2b1a09f8e7d6c5b"


def versus_view() -> view.ReportView:
    """A pull request against its base: the parity failure is new, the fallback failure was there
    already (known), one cell is fixed, one model got slower (side by side) and fell back more."""
    import dataclasses
    import random

    from ci_onnx.contracts.results import LatencyStat, PairedLatency, PlacedNode
    from ci_onnx.report.baseline import Baseline

    plan, head = scenarios.tinycnn()
    _, base = scenarios.tinycnn(seed=3)
    fixed = "ort1.32.0-cpu-op17-dynamo"
    slower = "ort1.32.0-cpu-op18-dynamo"
    rng = random.Random(7)

    def timed(median: float) -> LatencyStat:
        values = tuple(round(median * (1 + rng.gauss(0, 0.03)), 4) for _ in range(20))
        ordered = sorted(values)
        return LatencyStat(8, ordered[10], ordered[18], ordered[19], 20, values)

    by_id = {r.target.id: r for r in base}
    by_id[scenarios.PARITY_FAIL] = next(
        r for r in scenarios.all_passing()[1] if r.target.id == scenarios.PARITY_FAIL
    )
    by_id[fixed] = scenarios.errored(
        by_id[fixed], "onnxruntime crashed with SIGSEGV while creating the session"
    )
    moved = []
    for r in head:
        if r.target.id == slower:
            r = observed(
                dataclasses.replace(r, bundle="head-sha"),
                paired=PairedLatency(by_id[slower].bundle, (timed(0.9),), (timed(0.45),)),
            )
        placement = r.observed.placement
        if r.target.id == scenarios.FALLBACK_FAIL and placement is not None:
            nodes = (*placement.fallback_nodes, PlacedNode("/head/IsNaN", "IsNaN", scenarios.CPU))
            r = observed(r, placement=dataclasses.replace(placement, fallback_nodes=nodes))
        moved.append(r)
    by_id[slower] = dataclasses.replace(by_id[slower], bundle="base-sha")
    moved = [
        observed(r, paired=dataclasses.replace(paired, base_bundle="base-sha"))
        if (paired := r.observed.paired)
        else r
        for r in moved
    ]
    baseline = Baseline(
        BASE, "the artifact of run 6990 on main", by_id, planned=tuple(t.id for t in plan.targets),
        skipped=tuple(t.id for t in plan.targets if t.expected_skip),
    )  # fmt: skip
    collection = merge({r.target.id: r for r in moved}, plan)
    mode, why = gate.choose("", baseline=True, pull_request=True)
    decided = gate.decide(collection, plan, baseline, mode=mode, why=why)
    return view.build(collection, decided, commit=COMMIT, run_url=RUN_URL)


def rendered() -> dict[str, str]:
    return {
        "tinycnn-comment.md": render.render_within(tinycnn_view(), limits.COMMENT, marker=render.MARKER),
        "missing-and-error.md": render.render_within(missing_view(), limits.COMMENT),
        "all-passed.md": render.render_within(passing_view(), limits.COMMENT),
        "export-failed.md": render.render_within(export_failed_view(), limits.COMMENT),
        "many-256-comment.md": render.render_within(many_view(), limits.COMMENT, marker=render.MARKER),
        "versus-base-comment.md": render.render_within(versus_view(), limits.COMMENT, marker=render.MARKER),
    }
