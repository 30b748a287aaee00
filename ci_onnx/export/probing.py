"""One probe: torch and the exported graph (onnxruntime CPU) on the same inputs, and what it proves.

A difference convicts only where torch agrees with itself on that probe. Before a divergence counts,
the probe is run by torch a second way (float64, else a second float32 run: ``reference.Torch``): where
torch's two answers already differ beyond the tolerance, the probe is ill-conditioned (a variance of
zero under a normalisation, a sum that cancels) and proves nothing either way; where the graph's
difference is not well above torch's own, it is rounding. What was compared is written in the detail.
control-flow (values) and the dynamic-dim sweep (sizes) judge their probes here.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ci_onnx.contracts.bundle import Tolerance

Arrays = dict[str, npt.NDArray[np.generic]]
TorchRun = Callable[[Arrays], Mapping[str, npt.NDArray[np.generic]]]
SelfCheck = Callable[[Arrays], tuple[str, Mapping[str, npt.NDArray[np.generic]]]]

MARGIN = 10.0
"""A divergence convicts only when its max abs is this many times torch's own on the probe."""


@dataclasses.dataclass(frozen=True)
class Probe:
    label: str
    feeds: Arrays


class Verdict(enum.Enum):
    AGREES = "agrees"
    DIVERGES = "diverges"
    INCONCLUSIVE = "inconclusive"
    """torch rejected the probe, or disagrees with itself on it beyond the tolerance."""


@dataclasses.dataclass(frozen=True)
class Outcome:
    probe: str
    verdict: Verdict
    detail: str = ""
    output: str = ""
    graph_outputs: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    """What the graph gave on the probe (kept so another export's answer can be compared with it)."""


class Comparer:
    """torch against the exported graph on probes, with torch's own disagreement as the floor."""

    def __init__(
        self,
        model_path: Path,
        torch_run: TorchRun,
        self_check: SelfCheck | None,
        tolerance: Tolerance,
        per_output: Mapping[str, Tolerance],
    ) -> None:
        from ci_onnx.export.parity import cpu_session

        self.session = cpu_session(model_path)  # raises when onnxruntime cannot load the file
        self.torch_run = torch_run
        self.self_check = self_check
        self.tolerance = tolerance
        self.per_output = per_output
        self._inputs = {i.name for i in self.session.get_inputs()}
        self._names = [o.name for o in self.session.get_outputs()]

    def graph(self, feeds: Arrays) -> dict[str, Any]:
        got = self.session.run(None, {k: v for k, v in feeds.items() if k in self._inputs})
        return dict(zip(self._names, got, strict=True))

    def judge(self, probe: Probe) -> Outcome:
        try:
            expected = dict(self.torch_run(probe.feeds))
        except Exception as exc:  # the model itself rejects this input: no evidence either way
            return Outcome(probe.label, Verdict.INCONCLUSIVE, f"torch rejects it ({type(exc).__name__})")
        try:
            got = self.graph(probe.feeds)
        except Exception as exc:
            return Outcome(probe.label, Verdict.DIVERGES, f"onnxruntime failed to run it ({_line(exc)})")
        return self.weigh(probe, expected, got)

    def weigh(self, probe: Probe, expected: Mapping[str, Any], got: Mapping[str, Any]) -> Outcome:
        """Whether ``got`` (a graph's outputs) differs from torch's ``expected`` beyond torch's own floor."""
        from ci_onnx.verify.compare import describe, parity

        for name, value in got.items():
            if name not in expected:
                continue
            tol = self.per_output.get(name, self.tolerance)
            p = parity(name, np.asarray(value), np.asarray(expected[name]), tol)
            if p.passed:
                continue
            if p.shape_mismatch:
                return Outcome(
                    probe.label, Verdict.DIVERGES, f"output {name!r}: {p.shape_mismatch}", name, got
                )
            floor = self._floor(probe, name, np.asarray(expected[name]), tol)
            if floor is None:
                return Outcome(probe.label, Verdict.DIVERGES, f"output {name!r}: {describe(p)}", name, got)
            what, own, ill = floor
            if ill:
                return Outcome(
                    probe.label,
                    Verdict.INCONCLUSIVE,
                    f"ill-conditioned: {what} already differ on output {name!r} (max abs {own:.3g}) beyond "
                    "the tolerance",
                    name,
                    got,
                )
            if p.nonfinite_mismatches or p.max_abs > MARGIN * own:
                detail = f"output {name!r}: {describe(p)}; {what} on the same probe: max abs {own:.3g}"
                return Outcome(probe.label, Verdict.DIVERGES, detail, name, got)
            return Outcome(
                probe.label,
                Verdict.INCONCLUSIVE,
                f"output {name!r} differs by max abs {p.max_abs:.3g}, within {MARGIN:g}x of {what} "
                f"({own:.3g})",
                name,
                got,
            )
        return Outcome(probe.label, Verdict.AGREES, graph_outputs=got)

    def _floor(
        self, probe: Probe, name: str, expected: npt.NDArray[np.generic], tol: Tolerance
    ) -> tuple[str, float, bool] | None:
        """(what was compared, torch's own max abs difference, whether it exceeds the tolerance)."""
        from ci_onnx.verify.compare import parity

        if self.self_check is None:
            return None
        try:
            what, second = self.self_check(probe.feeds)
        except Exception:
            return None
        if name not in second:
            return None
        own = parity(name, np.asarray(second[name]), expected, tol)
        if own.shape_mismatch:
            return what, float("inf"), True
        return what, own.max_abs, not own.passed


def _line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:300]
