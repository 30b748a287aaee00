"""onnx-gate: a CI gate for models that ship as ONNX.

Importing this package is cheap: nothing here imports torch, onnxruntime or onnx.
"""

__version__ = "1.0.0"
