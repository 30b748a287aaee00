"""What a triage found, as the result JSON of a triaged cell carries it (``TargetResult.triage``).

Frozen dataclasses with no imports beyond the standard library: results.py embeds them, and the
JSON Schema of a TargetResult is generated from them (``python -m ci_onnx.contracts.schema``). The
object has a version of its own, so readers can tell what they hold while the TargetResult's stays the same.
"""

from __future__ import annotations

import dataclasses
import enum

TRIAGE_VERSION = 1


class FaultClass(enum.StrEnum):
    """Whose fault a divergence is, as the evidence says."""

    EXPORT = "export"
    """The ONNX reference (the graph's own semantics) differs from PyTorch: fix the model or the export."""
    RUNTIME = "runtime"
    """The target differs from the ONNX reference, with its optimizations off too, while the reference
    matches PyTorch: report it upstream, pin or exclude the release."""
    PRECISION = "precision"
    """A derived precision's node loses it against the fp32 graph: keep that node in fp32."""
    OPTIMIZATION = "optimization"
    """The target differs as it ran (its graph optimizations on) and not with them off."""
    TOLERANCE = "tolerance"
    """Every node is within a few times the tolerance and the error grows smoothly: the bound is tight."""


@dataclasses.dataclass(frozen=True)
class NodeError:
    """One node on the path from the first divergence to the failing output."""

    node: str
    op_type: str
    value: str
    """The output of the node that was compared."""
    max_abs: float
    share: float
    """max |got − ref| / (atol·max(1, max|ref|) + rtol·|ref|): above 1 the value is out of tolerance."""


@dataclasses.dataclass(frozen=True)
class Triage:
    """Where a failing cell first diverges, whose fault it is, and a reproduction, or why it stopped."""

    version: int
    check: str
    """The failing check that was triaged (``parity[logits]``, ``decision``)."""
    fault: FaultClass | None = None
    """None when the triage stopped before it could say (``stopped`` says why)."""
    node: str = ""
    op_type: str = ""
    summary: str = ""
    """One line: the class, the node and the evidence."""
    evidence: tuple[str, ...] = ()
    """The comparisons the class rests on, one sentence each."""
    torch_origin: str = ""
    """The module path and source line of the node in the PyTorch model, where known."""
    path: tuple[NodeError, ...] = ()
    """The error of each node from the first divergence down to the failing output."""
    compared: tuple[str, ...] = ()
    """The references that took part (``runtime, optimizations off``, ``onnx reference`` …)."""
    suggested_tolerance: dict[str, float] = dataclasses.field(default_factory=dict)
    """For a tolerance fault: the atol and rtol that would pass."""
    reproduction: str = ""
    """The reproduction's directory (model.onnx, test_data_set_0/, reproduce.py), relative to the run's
    output folder."""
    reproduce: str = ""
    """The one command that reproduces the divergence on that release."""
    reproduction_bytes: int = 0
    duration_s: float = 0.0
    stopped: str = ""
    """Why the triage stopped short (a timeout, a reference that could not run); empty when complete."""
    notes: tuple[str, ...] = ()
    """What could not be compared and why (a runner kind, torch absent, an op the reference lacks)."""
