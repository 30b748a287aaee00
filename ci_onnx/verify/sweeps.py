"""``sweep[seq=7]``: each sweep point of the bundle, run on the target, against its reference.

The reference of a point was computed at export for exactly its inputs (PyTorch; onnxruntime's
unoptimised CPU run for an ONNX-only bundle). A point fails where the runtime refuses it (the
runtime's message names the node, e.g. a Reshape whose target was baked at the traced length) or
where its outputs leave the tolerance; it is skipped, saying why, where the reference itself could
not be computed there or the runner kind does not run sweep points (it declares no
``can.sweep_points`` in matrix/runners.toml).
"""

from __future__ import annotations

from ci_onnx import matrix
from ci_onnx.contracts import serde
from ci_onnx.contracts.bundle import Manifest, SweepSet
from ci_onnx.contracts.results import CheckResult, LatencyStat, Observation
from ci_onnx.contracts.target import Status
from ci_onnx.observer.feeds import batch_symbols
from ci_onnx.verify import compare, decode
from ci_onnx.verify.context import Context
from ci_onnx.verify.evidence import Evidence, value


def checks(manifest: Manifest, obs: Observation, evidence: Evidence, runner: str) -> list[CheckResult]:
    info = matrix.runners().get(runner)
    unrun = (
        f"the {runner} observer runs the test data sets and batch sizes only, not the bundle's sweep "
        "points (runners.toml: it declares no can.sweep_points)"
        if info is None or not info.can.sweep_points
        else ""
    )
    timed = {s.point: s for s in obs.sweep_latency}
    return [_check(manifest, sw, obs, evidence, unrun, timed.get(sw.label)) for sw in manifest.sweep_sets]


def _check(
    manifest: Manifest,
    sw: SweepSet,
    obs: Observation,
    evidence: Evidence,
    unrun: str,
    stat: LatencyStat | None,
) -> CheckResult:
    name = f"sweep[{sw.label}]"
    traced = f"exported at {sw.symbol} = {sw.export_size}"
    if sw.error and not sw.directory:
        why = f"not checked: {sw.error} ({traced}), so there is no reference"
        return CheckResult(name, Status.SKIPPED, why)
    if unrun:
        return CheckResult(name, Status.SKIPPED, f"not run: {unrun}")
    if sw.directory in obs.sweep_errors:
        also = f"; the reference refuses it too ({sw.error})" if sw.error else ""
        return CheckResult(
            name,
            Status.FAILED,
            f"the graph does not run at {sw.symbol} = {sw.size} ({traced}), though {sw.symbol} is "
            f"declared dynamic: {obs.sweep_errors[sw.directory]}{also}; a size kept as a constant at "
            "export (int(), a Python number in a Reshape or slice) does this: compute it with tensor ops "
            "on the dim",
            {"symbol": sw.symbol, "size": sw.size, "export_size": sw.export_size},
        )
    if sw.error:
        why = f"not checked: the target runs it, but {sw.error} ({traced}), so there is no reference"
        return CheckResult(name, Status.SKIPPED, why)
    observed = evidence.sweep.get(sw.directory, {})
    if not observed:
        return CheckResult(name, Status.FAILED, f"the runner did not run the point {sw.label}")
    parts = []
    problems = []
    for spec in manifest.outputs:
        if spec.name not in observed:
            problems.append(f"the model gave no output {spec.name!r}")
            continue
        try:
            got = value(observed[spec.name])
            ref = value(evidence.sweep_reference[sw.directory][spec.name])
        except (decode.DecodeError, KeyError) as exc:
            problems.append(str(exc))
            continue
        problems += _declared_shape(manifest, sw, spec.name, got)
        parts.append(compare.values(spec.name, got, ref, manifest.tolerance_for(spec.name)))
    figures = {
        "symbol": sw.symbol,
        "size": sw.size,
        "export_size": sw.export_size,
        "parity": {p.output: serde.to_json(p) for p in parts},
    }
    if stat is not None:
        figures["latency"] = serde.to_json(stat)
    bad = [p for p in parts if not p.passed]
    if bad or problems:
        detail = "; ".join(
            [*problems, *(f"{p.output}: {p.shape_mismatch or compare.describe(p)}" for p in bad)]
        )
        return CheckResult(
            name,
            Status.FAILED,
            f"at {sw.symbol} = {sw.size} ({traced}) the outputs differ: {detail}",
            figures,
        )
    worst = max((p.max_abs for p in parts), default=0.0)
    timing = (
        f"; p50 {stat.p50_ms:.3g} ms, {stat.throughput:,.0f} items/s ({stat.batch_size} per run)"
        if stat is not None
        else ""
    )
    return CheckResult(
        name,
        Status.PASSED,
        f"matches the reference at {sw.symbol} = {sw.size} (max abs {worst:.3g}; {traced}){timing}",
        figures,
    )


def _declared_shape(manifest: Manifest, sw: SweepSet, output: str, got: object) -> list[str]:
    """Where an output axis declared as the swept dim (or the batch) has another size at this point:
    a graph whose shape contradicts its own declaration, whatever the reference says (an ONNX-only
    reference is the graph itself)."""
    shape = getattr(got, "shape", None)
    if shape is None:
        return []
    batch = batch_symbols(manifest)
    out = []
    for axis, symbol in manifest.dynamic_axes.get(output, {}).items():
        want = sw.size if symbol == sw.symbol else (sw.count if symbol in batch else None)
        if want is not None and int(axis) < len(shape) and shape[int(axis)] != want:
            out.append(
                f"output {output!r} has shape {list(shape)}, but its axis {axis} is declared {symbol} "
                f"(= {want} here)"
            )
    return out


def check(ctx: Context) -> list[CheckResult]:
    """The registry's entry (verify/judge.CHECKS)."""
    return checks(ctx.manifest, ctx.obs, ctx.evidence, ctx.target.runner)
