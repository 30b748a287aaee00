"""The ``engine-precision`` check: the precision an engine ran the model's nodes in, against the one asked.

An engine that picks its own precision (OpenVINO's CPU plugin runs floating-point nodes in bf16 by
default where the CPU has it) can change the numbers of a model exported in f32 without a word. Its
observer reads the compiled graph (ci_onnx/observer/openvino_engine.py): a node run in another
precision than asked fails the check, naming the nodes and the value the engine took; the effective
settings are the check's figures, so the result records them.
"""

from __future__ import annotations

from ci_onnx.contracts import serde
from ci_onnx.contracts.results import CheckResult, Observation
from ci_onnx.contracts.target import Status
from ci_onnx.verify.context import Context

NAME = "engine-precision"
SHOWN = 8


def check(ctx: Context) -> list[CheckResult]:
    """The registry's entry (verify/judge.CHECKS)."""
    return checks(ctx.obs)


def checks(obs: Observation) -> list[CheckResult]:
    """The check, where the runner observed the engine's precision; none otherwise."""
    p = obs.engine_precision
    if p is None:
        return []
    taken = ", ".join(f"{k} {v}" for k, v in sorted(p.effective.items())) or "nothing recorded"
    set_ = ", ".join(f"{k}={v}" for k, v in sorted(p.set.items())) or "the engine's defaults"
    figures = {
        "asked": p.asked,
        "set": p.set,
        "effective": p.effective,
        "nodes": p.nodes,
        "other_precision": [serde.to_json(n) for n in p.other_precision],
    }
    if not p.asked:
        return [
            CheckResult(
                NAME, Status.SKIPPED, f"no precision to ask of this bundle's nodes; took {taken}", figures
            )
        ]
    if not p.other_precision:
        text = f"all {p.nodes} computing nodes ran in {p.asked} ({set_}; took {taken})"
        return [CheckResult(NAME, Status.PASSED, text, figures)]
    ran = sorted({n.provider.split()[-1] for n in p.other_precision})
    listed = ", ".join(f"{n.name} ({n.op_type})" for n in p.other_precision[:SHOWN])
    more = " …" if len(p.other_precision) > SHOWN else ""
    text = (
        f"{len(p.other_precision)} of {p.nodes} computing nodes ran in {', '.join(ran)}, not {p.asked} as "
        f"asked ({set_}; took {taken}): {listed}{more}; set INFERENCE_PRECISION_HINT to {p.asked} "
        "(a preset of the runner) to run them as exported"
    )
    return [CheckResult(NAME, Status.FAILED, text, figures)]
