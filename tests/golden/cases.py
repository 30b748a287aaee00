"""The renderings kept as golden files, by file name; shared by the golden test and tests.golden.regen."""

from __future__ import annotations

from ci_onnx.report import gate, limits, render, view
from ci_onnx.report.collect import Collection, merge
from ci_onnx.report.junit_reader import JUnitCase, JUnitSummary
from tests.golden import scenarios

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

    from ci_onnx.results import CheckResult
    from ci_onnx.target import Status

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
                latency=(),
                decisions=None,
                placement=None,
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


def rendered() -> dict[str, str]:
    return {
        "tinycnn-comment.md": render.render_within(tinycnn_view(), limits.COMMENT, marker=render.MARKER),
        "missing-and-error.md": render.render_within(missing_view(), limits.COMMENT),
        "all-passed.md": render.render_within(passing_view(), limits.COMMENT),
        "export-failed.md": render.render_within(export_failed_view(), limits.COMMENT),
        "many-256-comment.md": render.render_within(many_view(), limits.COMMENT, marker=render.MARKER),
    }
