"""The serving figures as checks: the cold start, and the budgets of onnx-gate.yml's ``budgets:``.

``cold-start`` reports what the fresh process measured (or why nothing was), where the runner says.
A budget that is set becomes ``budget[cold_start_ms]``, ``budget[peak_rss_mb]``, ``budget[p99_ms]``
or ``budget[min_throughput]``: failed by how much the cell is over (or under), passed with its
headroom, skipped with the reason where the runner could not measure what it needs
(``Observation.unmeasured``).
"""

from __future__ import annotations

from ci_onnx.contracts import serde
from ci_onnx.contracts.results import CheckResult, Observation, ServingFigures
from ci_onnx.contracts.target import Status
from ci_onnx.contracts.verify_options import EVERY_BATCH, Budgets, PerBatch
from ci_onnx.observer.coldstart import KEY as COLD_START
from ci_onnx.verify.context import Context

MB = 1 << 20


def checks(obs: Observation, budgets: Budgets) -> list[CheckResult]:
    """``cold-start`` where the runner reported on it (figures, or why not), then each budget set."""
    out = [cold_start(obs)] if obs.serving is not None or COLD_START in obs.unmeasured else []
    if budgets.cold_start_ms is not None:
        out.append(cold_start_budget(obs, budgets.cold_start_ms))
    if budgets.peak_rss_mb is not None:
        out.append(peak_rss_budget(obs, budgets.peak_rss_mb))
    if budgets.p99_ms:
        out.append(p99_budget(obs, budgets.p99_ms))
    if budgets.min_throughput:
        out.append(throughput_budget(obs, budgets.min_throughput))
    return out


def mb(n: int | None) -> str:
    return "?" if n is None else f"{n / MB:.1f} MB"


def describe(s: ServingFigures) -> str:
    parts = []
    if s.cold_start_ms is not None:
        phases = ", ".join(
            f"{label} {value:.0f} ms"
            for label, value in (("import", s.import_ms), ("session", s.session_ms))
            if value is not None
        )
        parts.append(
            f"cold start {s.cold_start_ms:.0f} ms ({phases}, first run {s.first_run_ms or 0:.2f} ms)"
        )
        if s.warm_median_ms:
            ratio = (s.first_run_ms or 0.0) / s.warm_median_ms
            parts.append(f"first run {ratio:.1f}× the warm median {s.warm_median_ms:.3g} ms")
    if s.env_bytes is not None:
        parts.append(
            f"serving environment {mb(s.env_bytes)} on disk ({s.runtime_package or 'runtime'} "
            f"{mb(s.runtime_bytes)}, numpy {mb(s.numpy_bytes)}, model {mb(s.model_bytes)})"
        )
    elif s.model_bytes is not None:
        parts.append(f"model {mb(s.model_bytes)}")
    return "; ".join(parts)


def cold_start(obs: Observation) -> CheckResult:
    s = obs.serving
    figures = serde.to_json(s) if s is not None else {}
    why = obs.unmeasured.get(COLD_START, "")
    if s is None or s.cold_start_ms is None:
        reason = why or "the runner reported no cold start"
        sizes = f"; {describe(s)}" if s is not None and describe(s) else ""
        return CheckResult("cold-start", Status.SKIPPED, f"not measured: {reason}{sizes}", figures)
    return CheckResult("cold-start", Status.PASSED, describe(s), figures)


def _over(name: str, what: str, value: float, budget: float, unit: str) -> CheckResult:
    figures = {"value": value, "budget": budget, "unit": unit}
    if value > budget:
        by = value - budget
        return CheckResult(
            f"budget[{name}]",
            Status.FAILED,
            f"{what} {value:.4g} {unit} is {by:.4g} {unit} ({by / budget:.0%}) over budgets.{name} "
            f"({budget:.4g} {unit})",
            figures,
        )
    return CheckResult(
        f"budget[{name}]",
        Status.PASSED,
        f"{what} {value:.4g} {unit} is within budgets.{name} ({budget:.4g} {unit}; "
        f"{budget - value:.4g} {unit} to spare)",
        figures,
    )


def _skipped(name: str, why: str) -> CheckResult:
    return CheckResult(f"budget[{name}]", Status.SKIPPED, f"not checked: {why}")


def cold_start_budget(obs: Observation, budget: float) -> CheckResult:
    s = obs.serving
    if s is None or s.cold_start_ms is None:
        return _skipped(
            "cold_start_ms", obs.unmeasured.get(COLD_START) or "the runner reported no cold start"
        )
    return _over("cold_start_ms", "cold start", s.cold_start_ms, budget, "ms")


def peak_rss_budget(obs: Observation, budget: float) -> CheckResult:
    if obs.peak_rss_mb is None:
        why = obs.unmeasured.get("memory") or "no served batch size ran, so memory was not measured"
        return _skipped("peak_rss_mb", why)
    return _over("peak_rss_mb", "peak RSS", obs.peak_rss_mb, budget, "MB")


def p99_budget(obs: Observation, budgets: PerBatch) -> CheckResult:
    name = "p99_ms"
    if not obs.latency:
        return _skipped(
            name, obs.unmeasured.get("latency") or "no served batch size ran, so nothing was timed"
        )
    by_size = {str(s.batch_size): s for s in obs.latency}
    in_order = PerBatch(sorted(budgets.items(), key=lambda kv: -1 if kv[0] == EVERY_BATCH else int(kv[0])))
    budgeted, untimed = in_order.against(by_size)
    pairs = [(s, ms) for _, s, ms in budgeted]
    if not pairs:
        timed = ", ".join(sorted(by_size, key=int))
        return _skipped(
            name, f"batch {', '.join(untimed)} was not timed (timed: {timed}; verify.batch_sizes)"
        )
    figures = {
        "p99_ms": {str(s.batch_size): s.p99_ms for s, _ in pairs},
        "budget_ms": {str(s.batch_size): ms for s, ms in pairs},
    }
    over = [(s, ms) for s, ms in pairs if s.p99_ms > ms]
    aside = f"; batch {', '.join(untimed)} not timed" if untimed else ""
    if over:
        text = "; ".join(
            f"batch {s.batch_size}: p99 {s.p99_ms:.4g} ms is {s.p99_ms - ms:.4g} ms "
            f"({(s.p99_ms - ms) / ms:.0%}) over {ms:.4g} ms"
            for s, ms in over
        )
        return CheckResult(f"budget[{name}]", Status.FAILED, f"{text} (budgets.{name}){aside}", figures)
    text = ", ".join(f"batch {s.batch_size}: p99 {s.p99_ms:.4g} ≤ {ms:.4g} ms" for s, ms in pairs)
    return CheckResult(f"budget[{name}]", Status.PASSED, f"within budgets.{name}: {text}{aside}", figures)


def _where(key: str) -> str:
    return key if "=" in key else f"batch {key}"


def throughput_budget(obs: Observation, budgets: PerBatch) -> CheckResult:
    """Items per second at the median latency, per batch size (``8``) and sweep point (``seq=64``),
    against budgets.min_throughput: failed with the figure and how far under it is."""
    name = "min_throughput"
    timed = {**{str(s.batch_size): s for s in obs.latency}, **{s.point: s for s in obs.sweep_latency}}
    if not timed:
        why = obs.unmeasured.get("latency") or "no batch size or sweep point ran, so nothing was timed"
        return _skipped(name, why)
    pairs, untimed = budgets.against(timed)
    if not pairs:
        return _skipped(
            name,
            f"{', '.join(map(_where, untimed))} not timed (timed: {', '.join(map(_where, timed))}; "
            "verify.batch_sizes and verify.sweeps)",
        )
    figures = {
        "items_per_s": {k: round(s.throughput, 3) for k, s, _ in pairs},
        "budget_items_per_s": {k: least for k, _, least in pairs},
    }
    aside = f"; {', '.join(map(_where, untimed))} not timed" if untimed else ""
    under = [(k, s, least) for k, s, least in pairs if s.throughput < least]
    if under:
        text = "; ".join(
            f"{_where(k)}: {s.throughput:.4g} items/s is {least - s.throughput:.4g} items/s "
            f"({(least - s.throughput) / least:.0%}) under {least:.4g} items/s (p50 {s.p50_ms:.3g} ms for "
            f"{s.batch_size} items)"
            for k, s, least in under
        )
        return CheckResult(f"budget[{name}]", Status.FAILED, f"{text} (budgets.{name}){aside}", figures)
    text = ", ".join(f"{_where(k)}: {s.throughput:.4g} ≥ {least:.4g} items/s" for k, s, least in pairs)
    return CheckResult(f"budget[{name}]", Status.PASSED, f"within budgets.{name}: {text}{aside}", figures)


def check(ctx: Context) -> list[CheckResult]:
    """The registry's entry (verify/judge.CHECKS): cold start, and each budget the config sets."""
    return checks(ctx.obs, ctx.options.budgets)
