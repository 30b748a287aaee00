"""The ``optimized-cache`` check: the cached optimized graph must give the original session's outputs.

The python runner writes ``optcache.json`` (ci_onnx.observer.optcache) with the cache entry it used or
wrote, session creation timed from the original file and from the cached one, and the outputs of the
parity data sets on the cached graph. They must agree with the original session's within the cell's
tolerance (they are normally bit-identical: the same kernels on the same graph); the timings are
figures of the check, never a verdict. A runner kind that declares no cache (``can.optimized_cache``
in runners.toml) gets the check skipped, with why.
"""

from __future__ import annotations

import math

import numpy as np

from ci_onnx import matrix
from ci_onnx.contracts.bundle import Manifest
from ci_onnx.contracts.results import CheckResult, Observation
from ci_onnx.contracts.target import Status
from ci_onnx.verify.context import Context
from ci_onnx.verify.evidence import Evidence, Unreadable, value

CHECK = "optimized-cache"


def checks(
    manifest: Manifest, obs: Observation, evidence: Evidence, runner: str = "python"
) -> list[CheckResult]:
    record = evidence.optcache
    if record is None:
        if "optimized_cache" in obs.unmeasured:
            return [CheckResult(CHECK, Status.SKIPPED, f"not measured: {obs.unmeasured['optimized_cache']}")]
        if matrix.runners()[runner].can.optimized_cache:  # runners.toml: [runners.<kind>.can]
            return []  # an observation from before the cache existed
        why = f"not measured: the {runner} runner has no optimized-model cache"
        return [CheckResult(CHECK, Status.SKIPPED, why)]
    if isinstance(record, Unreadable):
        return [CheckResult(CHECK, Status.ERROR, record.message)]
    figures = {
        k: record.get(k)
        for k in ("state", "key", "create_ms_original", "create_ms_cached", "repeats", "cached_bytes")
        if k in record
    }
    if record.get("error"):
        return [
            CheckResult(
                CHECK,
                Status.SKIPPED,
                f"the optimized graph could not be cached on this target: {record['error']}",
                figures,
            )
        ]
    original, cached = record.get("create_ms_original"), record.get("create_ms_cached")
    if isinstance(original, (int, float)) and isinstance(cached, (int, float)) and original > 0:
        figures["ratio"] = round(cached / original, 4)
    problems, compared, identical, worst = _compare(manifest, obs, evidence)
    figures.update({"compared": compared, "identical": identical, "max_abs": worst})
    timing = (
        f"session creation {original:.1f} ms from the original, {cached:.1f} ms from the cache "
        f"({figures['ratio']:.2f}×; medians of {record.get('repeats')} interleaved)"
        if "ratio" in figures
        else "session creation not timed"
    )
    state = "written now" if record.get("state") == "written" else "loaded from the cache"
    if problems:
        return [
            CheckResult(
                CHECK, Status.FAILED, f"the optimized graph ({state}): {'; '.join(problems)}", figures
            )
        ]
    if not compared:
        return [CheckResult(CHECK, Status.SKIPPED, f"no outputs to compare ({state}); {timing}", figures)]
    same = "bit-identical" if identical == compared else f"within tolerance (max abs {worst:.3g})"
    return [
        CheckResult(
            CHECK,
            Status.PASSED,
            f"the optimized graph ({state}) gives the original's {compared} outputs, {same}; {timing}",
            figures,
        )
    ]


def _compare(manifest: Manifest, obs: Observation, evidence: Evidence) -> tuple[list[str], int, int, float]:
    from ci_onnx.verify import decode

    problems: list[str] = []
    compared = identical = 0
    worst = 0.0
    for directory, files in obs.outputs.items():
        for spec in manifest.outputs:
            if spec.name not in files:
                continue
            if spec.name not in evidence.cached.get(directory, {}):
                problems.append(f"{directory}: no output {spec.name!r} from the cached graph")
                continue
            try:
                got = value(evidence.cached[directory][spec.name])
                ref = value(evidence.observed.get(directory, {}).get(spec.name))
            except decode.DecodeError as exc:
                problems.append(f"{directory}: {exc}")
                continue
            if not (isinstance(got, np.ndarray) and isinstance(ref, np.ndarray)):
                same = repr(got) == repr(ref)
                compared, identical = compared + 1, identical + same
                if not same:
                    problems.append(f"{directory}: {spec.name!r} differs from the original session's")
                continue
            compared += 1
            if got.shape != ref.shape:
                problems.append(
                    f"{directory}: {spec.name!r} has shape {list(got.shape)}, not {list(ref.shape)}"
                )
                continue
            if np.array_equal(got, ref, equal_nan=got.dtype.kind in "fc"):
                identical += 1
                continue
            tol = manifest.tolerance_for(spec.name)
            a, b = got.astype(np.float64), ref.astype(np.float64)
            diff = np.abs(a - b)
            finite = diff[np.isfinite(diff)]
            worst = max(worst, float(finite.max()) if finite.size else math.inf)
            if not np.allclose(a, b, atol=tol.atol, rtol=tol.rtol, equal_nan=True):
                problems.append(
                    f"{directory}: {spec.name!r} differs from the original session's by up to {worst:.3g} "
                    f"(atol {tol.atol:g}, rtol {tol.rtol:g}); the cache entry is stale or the saved graph "
                    "is not equivalent"
                )
    return problems, compared, identical, worst


def check(ctx: Context) -> list[CheckResult]:
    """The registry's entry (verify/judge.CHECKS)."""
    return checks(ctx.manifest, ctx.obs, ctx.evidence, ctx.target.runner)
