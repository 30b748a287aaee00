"""The export's differential runs: torch against the written graph on probes, as two checks.

``dynamic-axes``: what the file says (checks.dynamic_axes), then the sweep of every declared dynamic
dim (sweep.py) where the file keeps them symbolic. ``control-flow``: the suspects TorchScript warned
about, judged on value probes (control_flow.py); a divergence there is first tried on the other
exporter's graph of the same model, exported here only when needed.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ci_onnx.config import Config
from ci_onnx.contracts.results import CheckResult
from ci_onnx.contracts.target import Status
from ci_onnx.export import checks, control_flow, inputs, reference, sweep, torch_export
from ci_onnx.export.probing import Comparer, Probe, Verdict

Arrays = Mapping[str, Any]


def findings(
    cfg: Config,
    path: Path,
    proto: Any,
    outcome: torch_export.ExportOutcome,
    exporter: str,
    torch_run: reference.Torch,
    batch: int,
    samples: Arrays | None,
    example: Arrays,
    maxima: Mapping[str, int] | None = None,
) -> list[CheckResult]:
    """``maxima``: the largest size of each dim (model.dim_max, the position table), which no probe passes."""
    m, v = cfg.model, cfg.verify
    graph_check = checks.dynamic_axes(proto, m.inputs, m.dynamic_axes)
    try:
        comparer: Comparer | str = Comparer(
            path, torch_run, torch_run.self_check, v.tolerance, v.tolerance_per_output
        )
    except Exception as exc:  # onnxruntime cannot load the file: reference-parity says so
        comparer = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
    off = _off_at_export_sizes(comparer, m, batch, v.seed)
    if off:  # what no probe can change: the reference-parity's finding, not a size's or a branch's
        why = f"the graph already disagrees with torch at the export sizes ({off}); see reference-parity"
        flow = f"{len(outcome.frozen_branches)} suspect branch(es), not judged: {why}"
        return [
            CheckResult(
                graph_check.name,
                graph_check.status,
                f"{graph_check.message}; the sizes were not swept: {why}",
                graph_check.figures,
                warnings=graph_check.warnings,
            ),
            *(
                [CheckResult("control-flow", Status.SKIPPED, flow, warnings=outcome.frozen_branches)]
                if outcome.frozen_branches
                else []
            ),
        ]
    out = [_swept(comparer, graph_check, m, batch, v.seed, exporter, outcome.frozen_branches, maxima or {})]
    if outcome.frozen_branches:
        first = _first(m.inputs, samples, batch)
        candidates = control_flow.probes(m.inputs, batch, m.dim_sizes, v.seed, first)
        with tempfile.TemporaryDirectory(prefix="onnx-gate-other-") as scratch:
            other = Other(torch_run, example, Path(scratch), opset=_opset(proto), cfg=cfg)
            out.append(control_flow.differential(comparer, outcome.frozen_branches, candidates, other))
    return out


def _off_at_export_sizes(comparer: Comparer | str, m: Any, batch: int, seed: int) -> str:
    """How the graph differs from torch on a random draw at the example's sizes; "" where it agrees.

    The differential checks judge what changes between probes; a graph that is off before anything
    changes says nothing about sizes or branches."""
    if isinstance(comparer, str):
        return ""
    draw = inputs.random_inputs(m.inputs, batch, seed + 7919, m.dim_sizes)
    outcome = comparer.judge(Probe("a random draw at the export sizes", draw))
    return outcome.detail if outcome.verdict is Verdict.DIVERGES else ""


def _swept(
    comparer: Comparer | str,
    graph_check: CheckResult,
    m: Any,
    batch: int,
    seed: int,
    exporter: str,
    suspects: tuple[str, ...],
    maxima: Mapping[str, int],
) -> CheckResult:
    if graph_check.status is not Status.PASSED:
        return graph_check  # the file already fixes a declared axis: that is the finding
    points = sweep.points(m.inputs, m.dynamic_axes, batch, m.dim_sizes, seed, maxima)
    if not points:
        return graph_check
    if isinstance(comparer, str):
        return CheckResult(
            graph_check.name,
            graph_check.status,
            f"{graph_check.message}; the sizes were not swept: onnxruntime CPU cannot load the model "
            f"({comparer}), see reference-parity",
            graph_check.figures,
            warnings=graph_check.warnings,
        )
    sizes = sweep.export_sizes(m.inputs, m.dynamic_axes, batch, m.dim_sizes)
    return sweep.check(comparer, points, sizes, graph_check, exporter, suspects, maxima)


class Other:
    """The dynamo export of the same model, made on first use, run by onnxruntime CPU on a probe."""

    def __init__(
        self, torch_run: reference.Torch, example: Arrays, scratch: Path, *, opset: int, cfg: Config
    ):
        self.torch_run = torch_run
        self.example = example
        self.path = scratch / "other.onnx"
        self.opset = max(opset, 18)
        self.cfg = cfg
        self._session: Any = None
        self._failed = False

    def __call__(self, feeds: Arrays) -> dict[str, Any] | None:
        import torch

        from ci_onnx.export.parity import cpu_session

        if self._failed:
            return None
        if self._session is None:
            m = self.cfg.model
            done = torch_export.export(
                self.torch_run.fresh(),
                [torch.tensor(self.example[s.name]) for s in m.inputs],
                self.path,
                exporter="dynamo",
                opset=self.opset,
                inputs=m.inputs,
                outputs=m.outputs,
                dynamic_axes=m.dynamic_axes,
                binding=self.torch_run.binding,
            )
            if not done.ok:
                self._failed = True
                return None
            self._session = cpu_session(self.path)
        names = [o.name for o in self._session.get_outputs()]
        graph_inputs = {i.name for i in self._session.get_inputs()}
        got = self._session.run(None, {k: v for k, v in feeds.items() if k in graph_inputs})
        return dict(zip(names, got, strict=True))


def _opset(proto: Any) -> int:
    return checks.default_opset(proto)


def _first(specs: Any, samples: Arrays | None, n: int) -> dict[str, Any] | None:
    """The first ``n`` real samples, where every input has a batch axis to take them along."""
    axes = inputs.batch_axes(specs)
    if samples is None or not all(s.name in axes for s in specs):
        return None
    return {s.name: np.take(samples[s.name], np.arange(n), axis=axes[s.name]) for s in specs}
