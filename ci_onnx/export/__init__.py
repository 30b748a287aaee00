"""The export stage: export once per (opset, exporter), check the file, write a Bundle.

``runner`` (the parent, no torch) picks the bundles and runs each export in a child process
(``python -m ci_onnx.export.worker``) so a crash or a hang of the exporter becomes a failed ``export``
finding. The child runs ``pipeline`` (torch) or ``onnx_only`` (a model exported elsewhere).
"""

from __future__ import annotations

CHECKS = (
    "export",
    "control-flow",
    "checker",
    "opset",
    "train-mode",
    "dynamic-axes",
    "outputs",
    "graph",
    "reference-parity",
    "stateful",
)
"""Every export finding, in the order they appear in the manifest and in JUnit."""
