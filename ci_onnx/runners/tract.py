"""The tract runner kind: tract (PyPI ``tract``, the Python bindings of sonos/tract) on the CPU.

The observer, ci_onnx/observer/tract_engine.py, sets the inputs' facts from the bundle's shapes and
runs the optimized model. tract says nothing of where or in which precision nodes ran: its placement
is declared unmeasured, so the fallback check is skipped with that reason.
"""

from __future__ import annotations

from ci_onnx.runners.engine import EngineRunner

KIND = "tract"
RUNNER = EngineRunner(KIND, "ci_onnx.observer.tract_engine")
