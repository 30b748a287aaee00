"""Run torch.onnx.export (dynamo or TorchScript) and keep everything it said.

Exceptions and warnings become an ExportOutcome value: the exporter's error without colour codes,
the unsupported operator it names, whether it stopped on control flow that depends on a tensor value
(dynamo's data-dependent guard), the TracerWarnings that mean TorchScript froze a branch.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import logging
import time
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ci_onnx.contracts.bundle import TensorSpec
from ci_onnx.export import errors, origin, signature

EXTERNAL_DATA_BYTES = 1_800_000_000
"""Above this the model cannot live in one protobuf file (2 GiB limit, with room for the graph)."""


@dataclasses.dataclass(frozen=True)
class ExportOutcome:
    ok: bool
    error: str = ""
    unsupported_op: str = ""
    construct: str = ""
    """The module whose call became the unsupported operator, where the exporter's dump says."""
    data_dependent: bool = False
    warnings: tuple[str, ...] = ()
    frozen_branches: tuple[str, ...] = ()
    """The suspects: TracerWarnings from outside torch (a tensor made a Python value, a value made a
    constant), each with the file:line that raised it."""
    duration_s: float = 0.0
    external_data: bool = False


def flat_call(model: Any, binding: signature.Binding, names: Sequence[str]) -> Any:
    """``model`` behind ``forward(*leaves) -> tuple of tensors``: the one structure both exporters see.

    The leaves are the declared inputs in order; ``binding`` rebuilds the call ``model.forward`` expects
    (keywords, defaults, nested tuples and dicts) and the result is flattened as the outputs are named.
    """
    import torch

    class FlatCall(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *leaves: Any) -> tuple[Any, ...]:
            result = binding.call(self.model, dict(zip(names, leaves, strict=True)))
            return tuple(signature.flatten(result))

    # eval, like the model: the TorchScript exporter restores the wrapper's mode onto the whole tree
    return FlatCall().eval()


def export(
    model: Any,
    example: Sequence[Any],
    path: Path,
    *,
    exporter: str,
    opset: int,
    inputs: Sequence[TensorSpec],
    outputs: Sequence[str],
    dynamic_axes: Mapping[str, Mapping[str, str]],
    binding: signature.Binding | None = None,
) -> ExportOutcome:
    """Export ``model`` called on ``example`` (torch tensors, in declared input order) to ``path``."""
    import torch

    external = sum(p.numel() * p.element_size() for p in model.parameters()) > EXTERNAL_DATA_BYTES
    names = [s.name for s in inputs]
    if binding is None:
        binding = signature.bind(model.forward, names)
    wrapped = flat_call(model, binding, names)
    start = time.monotonic()
    chatter = io.StringIO()
    logged = _LogRecorder()
    with warnings.catch_warnings(record=True) as caught, logged:
        warnings.simplefilter("always")
        try:
            # TorchScript traces with grad enabled: under no_grad torch picks fused inference kernels
            # (nn.TransformerEncoderLayer's fast path, aten::_transformer_encoder_layer_fwd) that have
            # no ONNX translation, and the graph would not be the model's own math
            grad = torch.no_grad() if exporter == "dynamo" else torch.enable_grad()
            with contextlib.redirect_stdout(chatter), grad:
                if exporter == "dynamo":
                    specific: dict[str, Any] = {
                        "dynamo": True,
                        "dynamic_shapes": dynamic_shapes(inputs, dynamic_axes),
                        "external_data": external,
                        "optimize": True,
                    }
                else:
                    specific = {
                        "dynamo": False,
                        "dynamic_axes": {
                            k: {int(a): n for a, n in ax.items()} for k, ax in dynamic_axes.items()
                        },
                        "do_constant_folding": True,
                    }
                torch.onnx.export(
                    wrapped,
                    tuple(example),
                    str(path),
                    opset_version=opset,
                    input_names=names,
                    output_names=list(outputs),
                    **specific,
                )
            failure = ""
        except Exception as exc:
            failure = _full_text(exc)
    kept = logged.messages + _warnings(caught)
    frozen = tuple(_describe(w) for w in caught if _froze_a_branch(w, Path(torch.__file__).parent))
    frozen = tuple(dict.fromkeys(frozen))
    duration = time.monotonic() - start
    if failure:
        op = errors.unsupported_operator(failure)
        construct = errors.construct(failure, op)
        if op and not construct:
            construct = (
                origin.dynamo(
                    wrapped, example, dynamic_shapes(inputs, dynamic_axes), errors.dynamo_target(failure)
                )
                if exporter == "dynamo"
                else origin.torchscript(wrapped, example, op)
            )
        return ExportOutcome(
            ok=False,
            error=errors.summarise(failure),
            unsupported_op=op,
            construct=construct,
            data_dependent=errors.is_data_dependent(failure),
            warnings=tuple(w for w in kept if w not in frozen),
            frozen_branches=frozen,
            duration_s=duration,
        )
    return ExportOutcome(
        ok=True,
        warnings=tuple(w for w in kept if w not in frozen),
        frozen_branches=frozen,
        duration_s=duration,
        external_data=external,
    )


def dynamic_shapes(
    inputs: Sequence[TensorSpec], dynamic_axes: Mapping[str, Mapping[str, str]]
) -> tuple[tuple[dict[int, Any] | None, ...]] | None:
    """dynamo's ``dynamic_shapes`` for ``FlatCall.forward(*leaves)``: one entry, the tuple of leaves.

    One ``Dim`` per symbolic name, shared across inputs; None when no axis is dynamic.
    """
    import torch

    dims: dict[str, Any] = {}
    out: list[dict[int, Any] | None] = []
    for spec in inputs:
        axes = dynamic_axes.get(spec.name, {})
        if not axes:
            out.append(None)
            continue
        out.append({int(a): dims.setdefault(n, torch.export.Dim(_identifier(n))) for a, n in axes.items()})
    return (tuple(out),) if dims else None


def _identifier(name: str) -> str:
    clean = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return clean if clean and not clean[0].isdigit() else f"d_{clean}"


def _full_text(exc: BaseException) -> str:
    parts = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        parts.append(f"<class '{type(current).__module__}.{type(current).__name__}'>: {current}")
        current = current.__cause__ or current.__context__
    return errors.strip_ansi("\n".join(parts))


_LOG_NOISE = ("torchvision is not installed",)
"""Logged on every dynamo export without torchvision; says nothing about the model."""


class _LogRecorder(logging.Handler):
    """Keeps what torch.onnx logs at WARNING and above (dynamo's opset fallback is only logged)."""

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.messages: list[str] = []
        self._logger = logging.getLogger("torch.onnx")

    def emit(self, record: logging.LogRecord) -> None:
        text = errors.strip_ansi(record.getMessage()).strip().splitlines()
        line = f"{record.levelname.lower()}: {text[0][:300]}" if text else ""
        if line and not any(n in line for n in _LOG_NOISE) and line not in self.messages:
            self.messages.append(line)

    def __enter__(self) -> _LogRecorder:
        self._logger.addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        self._logger.removeHandler(self)


def _froze_a_branch(w: warnings.WarningMessage, torch_dir: Path) -> bool:
    """A TracerWarning raised outside torch's own code: a suspect for control-flow's differential run.

    The tracer warns when a tensor becomes a Python value (a branch, a loop count, an index) or a
    Python value becomes a constant (``torch.tensor(x.shape[1])``, a default argument): what it froze
    may or may not depend on the input. torch's functions convert sizes while tracing (F.batch_norm
    checks the batch size); that is not the model's. Anywhere else (the model, transformers) it is.
    """
    if w.category.__name__ != "TracerWarning":
        return False
    return not Path(w.filename).resolve().is_relative_to(torch_dir.resolve())


def _describe(w: warnings.WarningMessage) -> str:
    text = errors.strip_ansi(str(w.message)).strip().splitlines()[0]
    if w.category.__name__ == "TracerWarning":
        text = text.split(" might cause")[0]  # the rest is the same boilerplate every time
    text = text[:300]
    return f"{w.category.__name__}: {text} ({Path(w.filename).name}:{w.lineno})"


def _warnings(caught: Sequence[warnings.WarningMessage]) -> list[str]:
    """Distinct warnings, each with where it was raised, without the noise of deprecations."""
    out: list[str] = []
    for w in caught:
        if issubclass(w.category, (DeprecationWarning, FutureWarning)):
            continue
        line = _describe(w)
        if line not in out:
            out.append(line)
    return out[:30]
