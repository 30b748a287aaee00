"""Exporter messages made readable: no ANSI colours, the unsupported operator named, control flow apart."""

from __future__ import annotations

import re
from pathlib import Path

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_TS_UNSUPPORTED = re.compile(
    r"Exporting the operator '([\w:.]+)' to ONNX opset version (\d+) is not supported"
)
_DYNAMO_UNSUPPORTED = re.compile(r"No ONNX function found for <OpOverload\(op='([\w.:]+)'")
_SUMMARY_LINE = re.compile(r"^<class '[\w.]+\.(\w+)'>: (.*)$", re.MULTILINE)
_RAISED_AT = re.compile(r"The following call raised this error:\s*\n\s*(File .*)\n\s*(.*)")

_WRAPPER = re.compile(r"^\w+: (Failed to (export|convert) |Error when translating node )")
"""torch.onnx's wrapper exceptions: they say which step failed, the inner ones say why."""

DATA_DEPENDENT = ("GuardOnDataDependentSymNode", "data-dependent expression")


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def unsupported_operator(text: str) -> str:
    """The operator an exporter could not translate (``aten::linalg_eigh``), or ''."""
    m = _TS_UNSUPPORTED.search(text) or _DYNAMO_UNSUPPORTED.search(text)
    if not m:
        return ""
    op = m.group(1)
    if "::" not in op and op.startswith("aten."):
        op = "aten::" + op.removeprefix("aten.").lstrip("_").split(".")[0]
    return op


_IR_SCOPE = re.compile(r"scope: (?P<scope>\S+)(?: # (?P<where>\S+))?")


def construct(text: str, op: str) -> str:
    """The module whose call became ``op``, from the TorchScript graph dumped with the error:
    ``module encoder.layers.0 (torch.nn.modules.transformer.TransformerEncoderLayer, transformer.py:917)``;
    "" where the dump does not say."""
    if not op:
        return ""
    for line in text.splitlines():
        if f"= {op}(" not in line:
            continue
        found = _IR_SCOPE.search(line)
        if found is None:
            continue
        parts = [p.split("::") for p in found["scope"].split("/") if "::" in p]
        names = [name for _, name in parts[1:] if name]
        if names and names[0] == "model":  # the gate's wrapper (torch_export.FlatCall) holds it as .model
            names = names[1:]
        cls = parts[-1][0] if parts else ""
        where = (found["where"] or "").rsplit("/", 1)[-1].rsplit(":", 1)[0]
        details = ", ".join(x for x in (cls, where) if x)
        return f"module {'.'.join(names) or '(the model itself)'} ({details})"
    return ""


_FRAME = re.compile(r'File "([^"]+)", line (\d+)|(\S+\.py)\((\d+)\)')
"""A frame of a Python stack trace (``File "net.py", line 12``) or of a TorchScript source range
(``net.py(12): forward``)."""


def dynamo_target(text: str) -> str:
    """The op dynamo found no ONNX function for, as torch names it (``aten._linalg_eigh``), or ''."""
    m = _DYNAMO_UNSUPPORTED.search(text)
    return m.group(1) if m else ""


def user_line(stack_trace: str, torch_dir: Path) -> str:
    """``net.py:12``: the innermost frame of ``stack_trace`` outside torch, or ''."""
    frames = [(a or c, int(b or d)) for a, b, c, d in _FRAME.findall(stack_trace)]
    mine = [(f, n) for f, n in frames if not Path(f).resolve().is_relative_to(torch_dir.resolve())]
    if not mine:
        return ""
    file, line = mine[-1] if "File " in stack_trace else mine[0]  # innermost last; a source range: first
    return f"{Path(file).name}:{line}"


def is_data_dependent(text: str) -> bool:
    return any(marker in text for marker in DATA_DEPENDENT)


def summarise(text: str, limit: int = 600) -> str:
    """The one or two lines of an exporter error that say what went wrong."""
    text = strip_ansi(text).strip()
    summary: list[str] = []
    for m in _SUMMARY_LINE.finditer(text):
        line = f"{m.group(1)}: {m.group(2).split(' This is step')[0].strip()}"
        if line not in summary:
            summary.append(line)
    specific = [line for line in summary if not _WRAPPER.search(line)]
    summary = specific or summary
    where = _RAISED_AT.search(text)
    if where:
        summary.append(f"at {where.group(1).strip()}: {where.group(2).strip()}")
    if not summary:
        summary = [ln.strip() for ln in text.splitlines() if ln.strip()][:2]
    out = " | ".join(summary)
    return out if len(out) <= limit else out[: limit - 1] + "…"
