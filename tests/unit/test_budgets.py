"""Serving figures and budgets: the checks, their messages, the config keys, the contracts, the report."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import jsonschema
import pytest

from ci_onnx import config
from ci_onnx.contracts import schema, serde
from ci_onnx.contracts.errors import ConfigError
from ci_onnx.contracts.results import SCHEMA_VERSION, Environment, LatencyStat, Observation, ServingFigures
from ci_onnx.contracts.target import Status
from ci_onnx.contracts.verify_options import Budgets, PerBatch, options_from
from ci_onnx.observer import coldstart
from ci_onnx.report import gate, render, view
from ci_onnx.report.collect import merge
from ci_onnx.verify import budgets
from tests.golden import scenarios
from tests.support.results import observed

SERVING = ServingFigures(
    cold_start_ms=420.0,
    import_ms=250.0,
    session_ms=12.0,
    first_run_ms=3.0,
    warm_median_ms=0.05,
    warm_runs=10,
    batch_size=1,
    runtime_package="onnxruntime",
    runtime_bytes=80 << 20,
    numpy_bytes=70 << 20,
    model_bytes=64 << 10,
    env_bytes=(150 << 20) + (64 << 10),
)
LATENCY = (LatencyStat(1, 0.05, 0.06, 0.08, 20), LatencyStat(32, 0.4, 0.5, 0.9, 20))


def observation(**fields: object) -> Observation:
    env = Environment("1.20.1", ("CPUExecutionProvider",), ("CPUExecutionProvider",), "linux")
    base = Observation(SCHEMA_VERSION, "t", env, serving=SERVING, latency=LATENCY, peak_rss_mb=120.0)
    return dataclasses.replace(base, **fields)  # type: ignore[arg-type]


def by_name(obs: Observation, b: Budgets) -> dict[str, object]:
    return {c.name: c for c in budgets.checks(obs, b)}


def test_the_cold_start_check_states_the_figures() -> None:
    [check] = budgets.checks(observation(), Budgets())
    assert check.name == "cold-start" and check.status is Status.PASSED
    assert "cold start 420 ms (import 250 ms, session 12 ms, first run 3.00 ms)" in check.message
    assert "first run 60.0× the warm median 0.05 ms" in check.message
    assert "serving environment 150.1 MB on disk (onnxruntime 80.0 MB, numpy 70.0 MB, model 0.1 MB)" in (
        check.message
    )
    assert check.figures["cold_start_ms"] == 420.0


def test_an_unmeasured_cold_start_is_skipped_with_the_reason_and_so_is_its_budget() -> None:
    obs = observation(
        serving=ServingFigures(model_bytes=1 << 20),
        unmeasured={"cold_start": "the fresh process failed (exit -11): Segmentation fault"},
    )
    checks = by_name(obs, Budgets(cold_start_ms=100.0))
    cold, budget = checks["cold-start"], checks["budget[cold_start_ms]"]
    assert cold.status is Status.SKIPPED and "exit -11" in cold.message and "model 1.0 MB" in cold.message  # type: ignore[attr-defined]
    assert budget.status is Status.SKIPPED and "exit -11" in budget.message  # type: ignore[attr-defined]


def test_no_serving_report_means_no_check() -> None:
    assert budgets.checks(observation(serving=None), Budgets()) == []


def test_each_budget_fails_by_how_much() -> None:
    checks = by_name(observation(), Budgets(cold_start_ms=300.0, peak_rss_mb=100.0, p99_ms={"*": 0.5}))
    assert {n: c.status for n, c in checks.items()} == {  # type: ignore[attr-defined]
        "cold-start": Status.PASSED,
        "budget[cold_start_ms]": Status.FAILED,
        "budget[peak_rss_mb]": Status.FAILED,
        "budget[p99_ms]": Status.FAILED,
    }
    assert checks["budget[cold_start_ms]"].message == (  # type: ignore[attr-defined]
        "cold start 420 ms is 120 ms (40%) over budgets.cold_start_ms (300 ms)"
    )
    assert checks["budget[peak_rss_mb]"].message == (  # type: ignore[attr-defined]
        "peak RSS 120 MB is 20 MB (20%) over budgets.peak_rss_mb (100 MB)"
    )
    assert checks["budget[p99_ms]"].message == (  # type: ignore[attr-defined]
        "batch 32: p99 0.9 ms is 0.4 ms (80%) over 0.5 ms (budgets.p99_ms)"
    )


def test_budgets_that_hold_pass_with_their_headroom() -> None:
    checks = by_name(
        observation(), Budgets(cold_start_ms=500.0, peak_rss_mb=200.0, p99_ms={"1": 0.1, "32": 1})
    )
    assert all(c.status is Status.PASSED for c in checks.values())  # type: ignore[attr-defined]
    assert "80 ms to spare" in checks["budget[cold_start_ms]"].message  # type: ignore[attr-defined]
    assert "batch 1: p99 0.08 ≤ 0.1 ms, batch 32: p99 0.9 ≤ 1 ms" in checks["budget[p99_ms]"].message  # type: ignore[attr-defined]


def test_a_p99_budget_of_a_batch_size_that_was_not_timed_is_skipped() -> None:
    checks = by_name(observation(), Budgets(p99_ms={"8": 1.0}))
    check = checks["budget[p99_ms]"]
    assert check.status is Status.SKIPPED and "batch 8 was not timed (timed: 1, 32" in check.message  # type: ignore[attr-defined]
    no_memory = by_name(
        observation(peak_rss_mb=None, unmeasured={"memory": "no /proc"}), Budgets(peak_rss_mb=1)
    )
    assert no_memory["budget[peak_rss_mb]"].status is Status.SKIPPED  # type: ignore[attr-defined]
    assert "no /proc" in no_memory["budget[peak_rss_mb]"].message  # type: ignore[attr-defined]


BASE = """\
version: 1
model: {factory: m.py:build, inputs: {x: {shape: [batch, 4]}}, outputs: [y]}
"""


def test_budgets_from_the_config_reach_the_verify_options() -> None:
    cfg = config.parse(
        BASE + "budgets: {cold_start_ms: 800, peak_rss_mb: 256, p99_ms: {'1': 2, '32': 9.5}}\n",
        Path("onnx-gate.yml"),
    )
    assert options_from(cfg).budgets == Budgets(800.0, 256.0, {"1": 2.0, "32": 9.5})
    one = config.parse(BASE + "budgets: {p99_ms: 3}\n", Path("onnx-gate.yml"))
    assert one.budgets == Budgets(p99_ms={"*": 3.0})
    assert config.parse(BASE, Path("onnx-gate.yml")).budgets == Budgets()


def test_a_per_batch_budget_is_one_number_or_a_map_wherever_it_comes_from() -> None:
    """The config's number or map, a caller's map, the plan JSON's: one PerBatch, read one way."""
    assert (PerBatch.parse(3), PerBatch.parse({8: 2}), PerBatch.parse(None)) == ({"*": 3.0}, {"8": 2.0}, {})
    b = Budgets(p99_ms={"8": 2.0}, min_throughput={"*": 10.0})
    back = serde.from_json(Budgets, serde.to_json(b))
    assert back == b and isinstance(back.p99_ms, PerBatch) and isinstance(back.min_throughput, PerBatch)
    assert (back.p99_ms.at("8"), back.p99_ms.at("1"), back.min_throughput.at("seq=64")) == (2.0, None, 10.0)
    assert back.p99_ms.against({"1": "a", "8": "b"}) == ([("8", "b", 2.0)], [])
    assert back.min_throughput.against({"1": "a"}) == ([("1", "a", 10.0)], [])


@pytest.mark.parametrize(
    ("budgets_yaml", "says"),
    [
        ("{cold_start_ms: -1}", "budgets.cold_start_ms"),
        ("{p99_ms: {batch: 3}}", "budgets.p99_ms"),
        ("{cold_start: 3}", "did you mean 'cold_start_ms'?"),
    ],
)
def test_a_bad_budget_is_one_line_naming_the_key(budgets_yaml: str, says: str) -> None:
    with pytest.raises(ConfigError) as err:
        config.parse(BASE + f"budgets: {budgets_yaml}\n", Path("onnx-gate.yml"))
    assert says in err.value.message and "\n" not in err.value.message


def test_observation_and_result_with_serving_figures_match_their_schemas() -> None:
    obs = observation(unmeasured={"placement": "x"})
    jsonschema.validate(serde.to_json(obs), schema.load_schema("observation.schema.json"))
    assert serde.from_json(Observation, serde.to_json(obs)) == obs
    _, results = scenarios.tinycnn()
    result = observed(results[0], serving=SERVING)
    jsonschema.validate(serde.to_json(result), schema.load_schema("target-result.schema.json"))
    older = serde.to_json(results[0])
    older["observation"].pop("serving", None)  # a result written before the field existed still reads
    jsonschema.validate(older, schema.load_schema("target-result.schema.json"))


def test_the_report_shows_the_serving_figures_and_a_failed_budget() -> None:
    plan, results = scenarios.tinycnn()
    failing = budgets.cold_start_budget(observation(), 300.0)
    results = [
        observed(dataclasses.replace(r, checks=(*r.checks, failing) if i == 0 else r.checks), serving=SERVING)
        for i, r in enumerate(results)
    ]
    c = merge({r.target.id: r for r in results}, plan)
    v = view.build(c, gate.decide(c, plan))
    row = next(r for r in v.serving if r.target == results[0].target.id)
    assert row.cold_start == "420 (250 / 12.00 / 3.00)" and row.first_vs_warm == "3 vs 0.05 (60.0×)"
    assert row.env_size == "150.1" and row.model_size == "0.062" and row.failed
    assert "❌ cold start 420 ms is 120 ms (40%) over" in row.budgets
    text = render.render(v)
    assert "### Serving: cold start in a fresh process" in text
    assert (
        f"| `{results[0].target.id}` | 420 (250 / 12.00 / 3.00) | 3 vs 0.05 (60.0×) | 150.1 | 0.062 |" in text
    )
    c = merge({r.target.id: r for r in scenarios.tinycnn()[1]}, plan)
    without = view.build(c, gate.decide(c, plan))
    assert without.serving == () and "### Serving" not in render.render(without)


def test_attach_records_why_the_fresh_process_gave_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.bundles import mlp_bundle

    bundle = mlp_bundle(tmp_path / "b")

    def crashed(*_: object) -> dict[str, object]:
        raise coldstart.Unmeasurable("the fresh process failed (exit -9): no message")

    monkeypatch.setattr(coldstart, "cold_start", crashed)
    obs = coldstart.attach(observation(serving=None), bundle, ["CPUExecutionProvider"], tmp_path / "obs")
    assert obs.unmeasured["cold_start"] == "the fresh process failed (exit -9): no message"
    assert (
        obs.serving.cold_start_ms is None
        and obs.serving.model_bytes == (bundle / "model.onnx").stat().st_size
    )
    [check] = budgets.checks(obs, Budgets())
    assert check.status is Status.SKIPPED and "exit -9" in check.message


def test_serving_figures_off_skips_cold_start_and_the_cache_saying_why(tmp_path: Path) -> None:
    """verify.serving_figures: false reaches the observer as two flags, and the two checks it skips
    say so instead of vanishing (a check left out silently reads as one that never existed)."""
    from ci_onnx.contracts.bundle import read_manifest
    from ci_onnx.contracts.target import Target
    from ci_onnx.observer import ort
    from ci_onnx.runners import base, python
    from ci_onnx.verify import cache_check, evidence
    from tests.bundles import mlp_bundle

    cfg = config.parse(BASE + "verify: {serving_figures: false}\n", Path("onnx-gate.yml"))
    options = options_from(cfg)
    assert options.serving_figures is False
    assert options_from(config.parse(BASE, Path("onnx-gate.yml"))).serving_figures is True
    bundle, out = mlp_bundle(tmp_path / "b"), tmp_path / "obs"
    target = Target("1.32.0", "cpu", 17, "onnx")
    launch = base.Launch(bundle, target, out, options, "CPUExecutionProvider")
    args = python.observer_args(launch, tmp_path / "env")
    assert "--opt-cache" not in args and {"--no-cold-start", "--no-opt-cache"} <= set(args)
    assert ort.main([*args, "--latency-runs", "2"]) == 0
    obs = serde.from_json(Observation, json.loads((out / "observation.json").read_text()))
    assert obs.serving is None and set(obs.unmeasured) >= {"cold_start", "optimized_cache"}
    manifest = read_manifest(bundle, verify_hashes=False)
    (cache,) = cache_check.checks(manifest, obs, evidence.load(manifest, obs, bundle, out))
    cold = budgets.cold_start(obs)
    for check in (cache, cold):
        assert check.status == Status.SKIPPED and "verify.serving_figures is false" in check.message
