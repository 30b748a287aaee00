"""Triage of a failing parity or decision cell: where it first diverges, whose fault it is, and a
minimal reproduction (README.md, "Triage").

graph (topology, origins, exposure) → references (the target's runtime with its optimizations off
and as it ran, onnx's ReferenceEvaluator, PyTorch) → walk (the first node out of tolerance whose
inputs are within) → classify (export, runtime, precision, optimization, tolerance) → repro (the
extracted subgraph with its real inputs). ``triage.run`` ties them together; the verify stage calls
it in a child process of its own, bounded by ``verify.triage_timeout_s``. Nothing here imports onnx
at import time: ``observe`` runs in target environments that hold only numpy and onnxruntime.
"""
