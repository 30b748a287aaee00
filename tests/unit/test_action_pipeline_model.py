"""The critical-path model's arithmetic (bench/pipeline_model.py), on made-up parts: which job pulls
what, waves beyond the concurrency limit, billed minutes. No figure here is a measurement."""

from __future__ import annotations

import dataclasses
import math

import pytest

from bench import pipeline_model as pm

PARTS = pm.Parts(
    verify_wheels_mb=60.0,
    export_wheels_mb=20.0,
    torch_wheel_mb=190.0,
    verify_env_mb=225.0,
    full_env_mb=1100.0,
    runtime_wheel_mb=17.0,
    install_s={"uv cold": 8.0, "uv warm": 1.0, "pip cold": 30.0, "runtime uv cold": 3.0},
    command_s={"plan": 1.0, "export": 10.0, "verify": 3.0, "report": 1.0},
)
A = pm.Assumptions()


def test_only_export_pulls_torch_in_the_slim_design() -> None:
    jobs = pm.jobs("slim", PARTS, A)
    assert [k for k in pm.KINDS if jobs[k].torch] == ["export"]
    assert jobs["verify"].setup_mb == A.base_image_mb + 60.0 + 17.0
    assert jobs["export"].setup_mb == A.base_image_mb + 60.0 + 20.0 + 190.0


def test_the_full_design_pulls_torch_everywhere_and_is_slower() -> None:
    full, slim = pm.jobs("full", PARTS, A), pm.jobs("slim", PARTS, A)
    assert all(full[k].torch for k in pm.KINDS)
    assert full["verify"].setup_s - slim["verify"].setup_s == pytest.approx(210.0 / A.pull_mb_per_s)
    pipe = pm.PIPELINES[0]
    assert pm.critical_path_s("full", pipe, PARTS, A) > pm.critical_path_s("slim", pipe, PARTS, A)


def test_the_composite_design_installs_on_the_runner() -> None:
    verify = pm.jobs("composite", PARTS, A)["verify"]
    assert verify.setup_mb == 60.0 + 17.0
    fixed = A.runner_start_s + A.checkout_s + 3 * A.artifact_s
    assert verify.setup_s == pytest.approx(fixed + A.setup_python_s + 8.0 + 3.0)


def test_targets_beyond_the_concurrency_limit_add_waves() -> None:
    a = pm.Assumptions(concurrency=20)
    verify = pm.jobs("slim", PARTS, a)["verify"].total_s
    one = pm.critical_path_s("slim", pm.Pipeline("x", 4, 20), PARTS, a)
    four = pm.critical_path_s("slim", pm.Pipeline("x", 4, 64), PARTS, a)
    assert four - one == pytest.approx(3 * verify)


def test_billing_rounds_every_job_up_to_a_minute() -> None:
    pipe = pm.Pipeline("x", 4, 64)
    used, billed = pm.ci_minutes("slim", pipe, PARTS, A)
    jobs = pm.jobs("slim", PARTS, A)
    assert billed == sum(
        n * math.ceil(jobs[k].total_s / 60) for k, n in zip(pm.KINDS, (1, 4, 64, 1), strict=True)
    )
    assert billed >= used


def test_an_unknown_design_is_refused() -> None:
    with pytest.raises(ValueError, match="design 'docker'"):
        pm.jobs("docker", PARTS, A)


def test_the_rendered_table_names_every_assumption_and_target() -> None:
    text = pm.render(PARTS, A, runs=3)
    for field in ("runner_start_s", "pull_mb_per_s", "concurrency"):
        assert f"`{field}`" in text
    assert "≤ 250 MB" in text and "≤ 4 min" in text and "no job installs torch" in text


# --- the verify layouts (bench/pipeline_layout.py) ---------------------------------------------

from bench import pipeline_layout as pl  # noqa: E402

COSTS = pl.ModelCosts(
    "m",
    export_s=10.0,
    export_before_s=10.0,
    verify_one_s=3.0,
    verify_many_s=4.5,
    many=4,
    bundle_mb=1.0,
    key_s=1.0,
    restored_s=2.0,
)


def test_n_targets_in_one_command_pay_the_start_once() -> None:
    assert COSTS.per_target_s == pytest.approx(0.5)
    assert COSTS.verify_work_s(1) == 3.0 and COSTS.verify_work_s(8) == pytest.approx(6.5)


def test_targets_side_by_side_are_the_start_once_and_the_targets_over_the_lanes() -> None:
    # start 2.5 s, 0.5 s a target: four one after another 4.5 s; side by side on 2 CPUs 3.75 s
    costs = dataclasses.replace(COSTS, verify_side_by_side_s=3.75)
    assert costs.verify_efficiency(2) == pytest.approx((2.0 / 1.25 - 1) / 1)
    assert costs.verify_work_s(4, 2) == pytest.approx(2.5 + 4 * 0.5 / 1.6)
    assert costs.verify_work_s(1, 2) == pytest.approx(3.0) and costs.verify_work_s(4, 1) == 4.5
    slower = dataclasses.replace(COSTS, verify_side_by_side_s=5.5)  # contention: measured, kept
    assert slower.verify_efficiency(2) is not None and slower.verify_work_s(4, 2) > COSTS.verify_work_s(4)
    assert COSTS.verify_efficiency(2) is None, "not measured: one after another"


def test_per_cell_is_the_designs_model_and_per_environment_one_job_each() -> None:
    shape = pl.Shape("x", "m", 4, (8,) * 8)
    before = pl.run("per cell", shape, COSTS, PARTS, A)
    after = pl.run("per environment, export jobs", shape, COSTS, PARTS, A)
    assert (before.count("export"), before.count("verify")) == (4, 64)
    assert (after.count("export"), after.count("verify")) == (4, 8), "cijobs: one job per release"
    slim = pm.jobs("slim", PARTS, A)
    assert dict(before.jobs)["verify"] == pytest.approx(slim["verify"].total_s + 1.0 / A.artifact_mb_per_s)
    assert before.billed_minutes == sum(math.ceil(s / 60) for _, s in before.jobs)
    assert after.billed_minutes < before.billed_minutes and after.critical_path_s < before.critical_path_s


def test_a_restored_bundle_costs_its_key_and_the_cache_not_the_export() -> None:
    shape = pl.Shape("x", "m", 2, (2,))
    cold = dict(pl.run("per environment, export jobs", shape, COSTS, PARTS, A).jobs)["export"]
    warm = dict(pl.run("per environment, export jobs", shape, COSTS, PARTS, A, restored=True).jobs)["export"]
    assert cold - warm == pytest.approx(COSTS.export_s - COSTS.restored_s - 1.0 / A.artifact_mb_per_s)


def test_the_plan_job_exports_where_cijobs_says_so_and_no_export_job_runs() -> None:
    shape = pl.Shape("x", "m", 4, (4,))
    costs = dataclasses.replace(COSTS, export_serial_s=4 * COSTS.export_s - 3 * 1.0, export_jobs=4)
    assert pl.in_plan(shape, costs)  # cijobs.export_layout on this shape's plan, 2 CPUs
    grouped = pl.run("per environment", shape, costs, PARTS, A)
    jobs = pl.run("per environment, export jobs", shape, costs, PARTS, A)
    assert grouped.count("export") == 0 and jobs.count("export") == 4
    plan = dict(grouped.jobs)["plan"] - dict(jobs.jobs)["plan"]
    uploads = 4 * (A.artifact_s + costs.bundle_mb / A.artifact_mb_per_s)
    assert plan == pytest.approx(costs.key_s + A.artifact_s + costs.export_many_s(4, pl.CPUS) + uploads)
    assert grouped.billed_minutes < jobs.billed_minutes


def test_export_children_side_by_side_are_the_parent_once_and_the_jobs_over_the_lanes() -> None:
    # one job 10 s of which 4 s a child; four one after another 22 s; side by side on 2 CPUs 14 s
    costs = dataclasses.replace(
        COSTS, export_s=10.0, export_serial_s=22.0, export_every_s=14.0, export_jobs=4
    )
    assert costs.job_s == pytest.approx(4.0)
    assert costs.parallel_efficiency(2) == pytest.approx((16 / 8 - 1) / 1)
    assert costs.export_many_s(4, 2) == pytest.approx(6.0 + 16 / 2)
    assert costs.export_many_s(1, 2) == pytest.approx(10.0), "never quicker than one child"


def test_waves_start_the_longest_jobs_first() -> None:
    assert pl._waves([5.0, 1.0, 3.0], 2) == 5.0 + 1.0
    with pytest.raises(ValueError, match="layout 'x'"):
        pl.run("x", pl.SHAPES[0], COSTS, PARTS, A)
