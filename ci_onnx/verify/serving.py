"""The checks of how a target serves: batch sizes, where nodes ran, latency and memory."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ci_onnx.contracts import serde
from ci_onnx.contracts.bundle import Manifest, batch_symbol, dims
from ci_onnx.contracts.results import CheckResult, Observation
from ci_onnx.contracts.target import Status
from ci_onnx.contracts.verify_options import VerifyOptions
from ci_onnx.observer.feeds import (
    batch_axis_problem,
    fixed_size,
    input_axes,
    on_axis_0,
    output_axes,
)
from ci_onnx.verify import compare
from ci_onnx.verify.context import Context
from ci_onnx.verify.evidence import Evidence, value


def batch_checks(
    manifest: Manifest,
    obs: Observation,
    evidence: Evidence,
    declared: Sequence[int] = (),
    *,
    any_axis: bool = True,
) -> list[CheckResult]:
    """One check per served batch size, where the inputs have a batch axis; a skip saying why not.

    A model whose batch axis is fixed is checked at its own size (one run against the bundle's
    reference). A size it cannot take fails where ``declared`` (verify.batch_sizes written in the
    config: a claim) holds it, with the fix, and is skipped where it came from the default."""
    no_axis = batch_axis_problem(manifest)
    if no_axis and (frozen := fixed_axis(manifest)) is not None:
        return [
            _fixed(manifest, obs, evidence, n, frozen, n in declared) for n in sorted(manifest.batch_sizes)
        ]
    checks = []
    batched = output_axes(manifest)
    if not no_axis and not batched:
        no_axis = "no output has the batch axis, so no output can be compared across batch sizes"
    if not no_axis and not any_axis and not on_axis_0(manifest):
        where = ", ".join(f"{k} axis {a}" for k, a in input_axes(manifest).items() if a)
        no_axis = (
            f"the batch lies off axis 0 ({where}), and this runner kind splits and stacks on axis 0 "
            "only (runners.toml: it declares no can.batch_axes)"
        )
    unbatched = [s for s in manifest.outputs if s.name not in batched]
    symbol = batch_symbol(manifest.inputs, manifest.dynamic_axes)
    twice = [s.name for s in unbatched if dims(s, manifest.dynamic_axes).count(symbol) > 1]
    whole = [s.name for s in unbatched if s.name not in twice]
    said = [
        *([f"{', '.join(twice)} (the batch on two axes)"] if twice else []),
        *([f"{', '.join(whole)} (no one axis carries the batch)"] if whole else []),
    ]
    aside = (
        f"; not compared: {'; '.join(said)}: it depends on the whole batch, and parity and the export's "
        "dynamic-axes check compare it whole"
        if said
        else ""
    )
    for n in sorted(manifest.batch_sizes):
        name = f"batch[{n}]"
        if no_axis:
            checks.append(CheckResult(name, Status.SKIPPED, f"not checked: {no_axis}"))
            continue
        if str(n) in obs.batch_errors:
            checks.append(CheckResult(name, Status.FAILED, obs.batch_errors[str(n)]))
            continue
        if obs.batch_reference_error or str(n) not in evidence.batch:
            why = obs.batch_reference_error or "the runner did not run this batch size"
            checks.append(CheckResult(name, Status.FAILED, why))
            continue
        parts = []
        for spec in (s for s in manifest.outputs if s.name in batched):
            served = evidence.batch[str(n)]
            if spec.name not in served or spec.name not in evidence.batch_reference:
                continue
            ref = _first(value(evidence.batch_reference[spec.name]), n, batched[spec.name])
            got = value(served[spec.name])
            parts.append(compare.values(spec.name, got, ref, manifest.tolerance_for(spec.name)))
        bad = [p for p in parts if not p.passed]
        figures = {p.output: serde.to_json(p) for p in parts}
        if bad:
            detail = "; ".join(f"{p.output}: {p.shape_mismatch or compare.describe(p)}" for p in bad)
            checks.append(
                CheckResult(
                    name, Status.FAILED, f"batch {n} differs from {n} single runs: {detail}{aside}", figures
                )
            )
        else:
            worst = max((p.max_abs for p in parts), default=0.0)
            text = f"one run of batch {n} matches {n} single runs (max abs {worst:.3g}){aside}"
            checks.append(CheckResult(name, Status.PASSED, text, figures))
    return checks


def fixed_axis(manifest: Manifest) -> tuple[str, int] | None:
    """(input, size) of the first input whose axis 0 the model fixes (and dynamic_axes does not
    declare): what keeps it from serving other batch sizes."""
    for spec in manifest.inputs:
        declared = "0" in manifest.dynamic_axes.get(spec.name, {})
        if spec.shape and isinstance(spec.shape[0], int) and not declared:
            return spec.name, spec.shape[0]
    return None


def _fixed(
    manifest: Manifest,
    obs: Observation,
    evidence: Evidence,
    n: int,
    frozen: tuple[str, int],
    declared: bool,
) -> CheckResult:
    """``batch[n]`` of a model whose batch axis is fixed: at its own size, one run of the first ``n``
    samples against the bundle's reference; at another, failed (a claim) or skipped (the default)."""
    name, size = frozen
    own = fixed_size(manifest)
    if n != own:
        why = (
            f"the batch axis of input {name!r} is fixed at {size} in the model, so it cannot serve batch {n}"
        )
        if declared:
            return CheckResult(
                f"batch[{n}]",
                Status.FAILED,
                f"{why}, which verify.batch_sizes declares; declare dynamic_axes for input {name!r} on "
                f"the axis that carries the batch (model.dynamic_axes: {{{name}: {{0: batch}}}} where it is "
                f"axis 0) and export again, or drop {n} from verify.batch_sizes",
            )
        return CheckResult(
            f"batch[{n}]",
            Status.SKIPPED,
            f"not checked: {why} (verify.batch_sizes' default; write the sizes you serve to make them "
            "a claim)",
        )
    check = f"batch[{n}]"
    if str(n) in obs.batch_errors:
        return CheckResult(check, Status.FAILED, obs.batch_errors[str(n)])
    ds = manifest.test_data_sets[0].directory if manifest.test_data_sets else ""
    served = evidence.batch.get(str(n), {})
    refs = evidence.reference.get(ds, {})
    if not served:
        return CheckResult(check, Status.FAILED, "the runner did not run the model's own batch size")
    parts = []
    for spec in manifest.outputs:
        if spec.name in served and spec.name in refs:
            ref, got = value(refs[spec.name]), value(served[spec.name])
            ref = ref[:n] if getattr(ref, "ndim", 0) else ref
            parts.append(compare.values(spec.name, got, ref, manifest.tolerance_for(spec.name)))
    figures = {p.output: serde.to_json(p) for p in parts}
    bad = [p for p in parts if not p.passed]
    if bad or not parts:
        detail = "; ".join(f"{p.output}: {p.shape_mismatch or compare.describe(p)}" for p in bad)
        return CheckResult(
            check,
            Status.FAILED,
            f"batch {n} (the model's fixed size) differs from PyTorch: {detail or 'no output to compare'}",
            figures,
        )
    worst = max(p.max_abs for p in parts)
    return CheckResult(
        check,
        Status.PASSED,
        f"batch {n} is the model's fixed size: one run of the first {n} sample(s) matches PyTorch "
        f"(max abs {worst:.3g}); timed under latency",
        figures,
    )


def fallback(obs: Observation, accelerator: bool, options: VerifyOptions) -> CheckResult:
    if obs.strict_fallback_error:
        return CheckResult("fallback", Status.FAILED, f"strict fallback: {obs.strict_fallback_error}")
    p = obs.placement
    if p is None:
        return CheckResult(
            "fallback",
            Status.ERROR,
            f"where nodes ran could not be learnt: {obs.placement_error or 'no data'}",
        )
    status, text = compare.fallback_verdict(
        p, accelerator=accelerator, max_time_share=options.max_cpu_time_share, strict=options.strict_fallback
    )
    figures = {
        "source": p.source,
        "nodes_by_provider": p.nodes_by_provider,
        "time_us_by_provider": p.time_us_by_provider,
        "cpu_time_share": round(p.cpu_time_share, 4),
        "max_time_share": options.max_cpu_time_share,
        "fallback_nodes": [serde.to_json(n) for n in p.fallback_nodes],
    }
    return CheckResult("fallback", status, f"{text} [from {p.source}]", figures)


def timing(obs: Observation) -> list[CheckResult]:
    checks = []
    if obs.latency:
        per = "; ".join(
            f"batch {s.batch_size}: p50 {s.p50_ms:.3g} ms, p90 {s.p90_ms:.3g} ms, {s.tail()[1]} "
            f"{s.tail()[0]:.3g} ms"
            for s in obs.latency
        )
        created = f"; session created in {obs.session_create_ms:.0f} ms" if obs.session_create_ms else ""
        figures = {
            "latency": [serde.to_json(s) for s in obs.latency],
            "session_create_ms": obs.session_create_ms,
        }
        checks.append(CheckResult("latency", Status.PASSED, per + created, figures))
    else:
        checks.append(
            CheckResult("latency", Status.SKIPPED, "no served batch size ran, so nothing was timed")
        )
    if obs.peak_rss_mb is not None:
        text = (
            f"peak RSS {obs.peak_rss_mb:.0f} MB while {obs.memory_threads} threads served the largest batch"
        )
        figures = {
            "peak_rss_mb": obs.peak_rss_mb,
            "rss_before_mb": obs.rss_before_mb,
            "threads": obs.memory_threads,
        }
        checks.append(CheckResult("memory", Status.PASSED, text, figures))
    else:
        checks.append(
            CheckResult("memory", Status.SKIPPED, "no served batch size ran, so memory was not measured")
        )
    return checks


def _first(reference: Any, n: int, axis: int) -> Any:
    """The first ``n`` samples of a stacked reference along its batch ``axis``."""
    import numpy as np

    return np.take(reference, np.arange(n), axis=axis) if isinstance(reference, np.ndarray) else reference[:n]


def batch(ctx: Context) -> list[CheckResult]:
    """``batch[N]`` per served size (the registry's entry, verify/judge.CHECKS)."""
    return batch_checks(
        ctx.manifest, ctx.obs, ctx.evidence, ctx.options.declared_batch_sizes, any_axis=ctx.kind.batch_axes
    )


def fallback_check(ctx: Context) -> list[CheckResult]:
    """``fallback``: where the nodes ran (the registry's entry, verify/judge.CHECKS)."""
    return [fallback(ctx.obs, ctx.provider.accelerator, ctx.options)]


def timing_check(ctx: Context) -> list[CheckResult]:
    """``latency`` and ``memory`` (the registry's entry, verify/judge.CHECKS)."""
    return timing(ctx.obs)
