"""Triage where verify and ``onnx-gate triage`` meet it: which check of a result to triage, the request
for it, and the triage run in a child process bounded by ``verify.triage_timeout_s``.

A triage never changes a verdict: what it finds, or why it stopped, is the result's ``triage`` object.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ci_onnx.contracts import proc, serde
from ci_onnx.contracts.bundle import Manifest
from ci_onnx.contracts.results import TargetResult
from ci_onnx.contracts.target import Status, Target
from ci_onnx.contracts.triage_contract import TRIAGE_VERSION, Triage
from ci_onnx.contracts.verify_options import VerifyOptions
from ci_onnx.runners.base import RunnerEnv
from ci_onnx.triage.request import Request

CPU = "CPUExecutionProvider"
KILL_GRACE_S = 10.0
"""The child's own children end at the budget; past it and this grace, the triage is killed."""


def failing_check(result: TargetResult, manifest: Manifest | None) -> tuple[str, str] | None:
    """The first failing parity or decision check and the output it is about, or None: the cell's
    ``parity[<output>]`` and ``decision``, or the bundle's ``reference-parity`` (verify then runs
    nothing, since the export is wrong; the triage says where)."""
    for c in result.checks:
        if c.status is not Status.FAILED:
            continue
        if c.name.startswith("parity[") and c.name.endswith("]"):
            return c.name, c.name[len("parity[") : -1]
        if c.name == "decision" and manifest is not None and manifest.decision is not None:
            return c.name, manifest.decision.output
        if c.name == "reference-parity":  # the export's own parity: onnxruntime CPU against PyTorch
            out = next(
                (
                    k.split("/", 1)[1]
                    for k, v in c.figures.items()
                    if isinstance(v, dict) and v.get("out_of_tolerance")
                ),
                None,
            )
            if out is not None:
                return c.name, out
    return None


def request(
    bundle: Path,
    target: Target,
    check: tuple[str, str],
    out_dir: Path,
    *,
    environment: RunnerEnv,
    providers: tuple[str, ...],
    preset: Mapping[str, Any],
    release: str,
    timeout_s: float,
    torch_config: str,
    base_env: Mapping[str, str],
    limits: tuple[float, float],
) -> Request:
    """``limits``: verify.triage_memory_mb and verify.triage_disk_mb."""
    return Request(
        bundle, target, check[0], check[1], out_dir, environment.program, providers, dict(preset), release,
        base_env, timeout_s, torch_config, environment.kind, str(environment.path), environment.package,
        *limits,
    )  # fmt: skip


_PATHS = ("bundle", "out_dir")


def request_to_json(req: Request) -> dict[str, Any]:
    data = {f.name: getattr(req, f.name) for f in dataclasses.fields(req) if f.name != "base_env"}
    data.update({k: str(Path(data[k]).resolve()) for k in _PATHS})
    data.update(target=serde.to_json(req.target), providers=list(req.providers))
    return data


def request_from_json(data: Mapping[str, Any], *, base_env: Mapping[str, str]) -> Request:
    given = {**data, "target": serde.from_json(Target, data["target"]), "providers": tuple(data["providers"])}
    given.update({k: Path(data[k]) for k in _PATHS})
    return Request(**given, base_env=base_env)


def bounded(req: Request, base_env: Mapping[str, str]) -> Triage:
    """``run.triage(req)`` in a child process, killed past its budget: a Triage whatever happens."""
    with tempfile.TemporaryDirectory(prefix="onnx-gate-triage-req-") as tmp:
        req_path, out_path = Path(tmp) / "request.json", Path(tmp) / "triage.json"
        req_path.write_text(json.dumps(request_to_json(req)))
        done = proc.run(
            [sys.executable, "-m", "ci_onnx.triage", str(req_path), str(out_path)],
            timeout=req.timeout_s + KILL_GRACE_S,
            env=base_env,
            what=f"{req.target.id} triage",
        )
        if done.timed_out:
            return Triage(
                TRIAGE_VERSION,
                req.check,
                stopped=f"verify.triage_timeout_s ({req.timeout_s:g} s) ran out",
                duration_s=round(done.duration_s, 3),
            )
        if not done.ok or not out_path.is_file():
            return Triage(
                TRIAGE_VERSION,
                req.check,
                stopped=f"the triage process failed: {done.describe_failure()}",
                duration_s=round(done.duration_s, 3),
            )
        return serde.from_json(Triage, json.loads(out_path.read_text()))


def attach(
    result: TargetResult,
    manifest: Manifest | None,
    bundle: Path,
    out_dir: Path,
    *,
    environment: RunnerEnv,
    providers: tuple[str, ...],
    preset: Mapping[str, Any],
    timeout_s: float,
    torch_config: str,
    base_env: Mapping[str, str],
    limits: tuple[float, float],
) -> TargetResult:
    """``result`` with the triage of its first failing parity or decision check (unchanged otherwise),
    observed through the target's own runner kind in its own environment."""
    check = failing_check(result, manifest)
    if check is None or timeout_s <= 0:
        return result
    req = request(
        bundle, result.target, check, out_dir, environment=environment, providers=providers, preset=preset,
        release=result.ran_release(), timeout_s=timeout_s, torch_config=torch_config, base_env=base_env,
        limits=limits,
    )  # fmt: skip
    return dataclasses.replace(result, triage=bounded(req, base_env))


def for_cell(
    result: TargetResult,
    manifest: Manifest,
    bundle: Path,
    out_dir: Path,
    environment: RunnerEnv,
    options: VerifyOptions,
    ep: str,
    base_env: Mapping[str, str],
) -> TargetResult:
    """:func:`attach` with what the verify stage holds for a cell: its options (the triage's budget,
    the config whose factory is the PyTorch reference, the session presets) and its provider."""
    from ci_onnx import matrix
    from ci_onnx.runners import session

    # A kind with presets of its own engine applies them itself, by the target (runners.toml).
    engine = matrix.runners()[result.target.runner].presets_with(options.engine_presets)
    own = result.target.session_options in engine
    preset = {} if own else session.resolve(result.target.session_options, options.session_presets).settings()
    return attach(
        result, manifest, bundle, out_dir, environment=environment,
        providers=providers_for(ep), preset=preset, timeout_s=options.triage_timeout_s,
        torch_config=options.triage_config, base_env=base_env, limits=limits_of(options),
    )  # fmt: skip


def limits_of(options: VerifyOptions) -> tuple[float, float]:
    """What a triage may hold in memory and write to disk, in MB."""
    return options.triage_memory_mb, options.triage_disk_mb


def providers_for(ep: str) -> tuple[str, ...]:
    """The providers of a cell's session: its own, then the CPU (as the runners create it)."""
    return (ep,) if ep == CPU else (ep, CPU)
