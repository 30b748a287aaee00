"""Triage of a failing parity or decision cell: where it first diverges, whose fault it is, and a
minimal reproduction (docs/guides/triage.md).

``attach`` (which check, the bounded child) → ``run`` (one triage) → ``sample`` (the worst sample) →
``observers`` (the target's runtime in its own environment: ``observe`` for the python kind, every
other kind through its own runner) + ``reference`` (onnx's ReferenceEvaluator) + ``torchref``
(PyTorch, module by module) → ``walk`` (the first node out of tolerance whose inputs are within it) →
``classify`` and ``faults`` (export, runtime, precision, optimization, tolerance, with ``findings``)
→ ``repro`` (the extracted subgraph with its real inputs). ``graph`` holds the topology, the nodes'
origins and the exposed graph; ci_onnx/contracts/triage_contract.py holds the ``triage`` object of a result.
Nothing here imports onnx at import time: ``observe`` runs in target environments that hold only
numpy and onnxruntime.
"""
