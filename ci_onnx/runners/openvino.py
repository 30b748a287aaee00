"""The openvino runner kind: OpenVINO's own runtime (PyPI ``openvino``) on the CPU device.

Not onnxruntime's OpenVINO execution provider (the python kind's ``openvino`` provider): the engine
itself reads the ONNX file and compiles it. Each cell runs under one of the kind's presets
(runners.toml ``[runners.openvino.presets]``: the engine's defaults, f32), handed to the observer,
ci_onnx/observer/openvino_engine.py, which records the values the compiled model took and the
precision every node of its runtime graph ran in.
"""

from __future__ import annotations

from ci_onnx.runners.engine import EngineRunner

KIND = "openvino"
RUNNER = EngineRunner(KIND, "ci_onnx.observer.openvino_engine", "--engine-options")
