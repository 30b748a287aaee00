"""Where in the model's code an operator the exporter could not translate was made.

Found only on that failure, by tracing the model again: TorchScript's source range of the call (the
user's file:line), dynamo's node in torch.export's own program (its module path, class and line).
"""

from __future__ import annotations

import contextlib
import io
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ci_onnx.export import errors


def dynamo(wrapped: Any, example: Sequence[Any], shapes: Any, target: str) -> str:
    """The module and source line of the call dynamo could not translate, from torch.export's own
    program (traced again: the failed export keeps none); "" where it cannot be found."""
    import torch

    want = _op_name(target)
    if not want:
        return ""
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), torch.no_grad():
            warnings.simplefilter("ignore")
            program = torch.export.export(wrapped, tuple(example), dynamic_shapes=shapes, strict=False)
    except Exception:
        return ""
    found = next((n for n in program.graph.nodes if _op_name(str(n.target)) == want), None)
    if found is None:
        return ""
    stack = list((found.meta.get("nn_module_stack") or {}).values())
    path, cls = stack[-1] if stack else ("", "")
    names = [p for p in str(path).replace("L['self']", "").split(".") if p]
    if names and names[0] == "model":  # FlatCall holds the model as .model
        names = names[1:]
    where = errors.user_line(str(found.meta.get("stack_trace") or ""), Path(torch.__file__).parent)
    cls_name = getattr(cls, "__qualname__", str(cls))
    return (
        f"module {'.'.join(names) or '(the model itself)'} ({', '.join(x for x in (cls_name, where) if x)})"
    )


def torchscript(wrapped: Any, example: Sequence[Any], op: str) -> str:
    """Where the model's code called ``op`` (``net.py:70``), from a trace of it; "" where not found."""
    import torch

    try:
        with warnings.catch_warnings(), torch.enable_grad():
            warnings.simplefilter("ignore")
            graph, _ = torch.jit._get_trace_graph(wrapped, tuple(example))
    except Exception:
        return ""
    node = next((n for n in graph.nodes() if n.kind() == op), None)
    where = errors.user_line(node.sourceRange(), Path(torch.__file__).parent) if node is not None else ""
    return f"the call at {where}" if where else ""


def _op_name(target: str) -> str:
    """``aten._linalg_eigh.default`` and ``aten::linalg_eigh`` → ``linalg_eigh``."""
    name = target.replace("::", ".").split(".")
    return name[1].lstrip("_") if len(name) > 1 and name[0] == "aten" else ""
