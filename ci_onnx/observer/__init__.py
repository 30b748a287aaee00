"""The observer: what runs INSIDE a target's environment, and only observes.

``python -m ci_onnx.observer.ort`` loads a bundle on one onnxruntime release and writes an Observation
(observation.json) plus the raw outputs as TensorProto files; it draws no verdict. The environment
holds numpy and its onnxruntime, nothing else: the modules here import the standard library, numpy,
onnxruntime, each other and the contracts they read and write (:data:`CONTRACTS`), never onnx,
torch, click or another part of onnx-gate (tests/unit/test_verify_imports.py checks every module).
The gate's side may import from here (placement, values, feeds, session presets); never the reverse.
"""

CONTRACTS = (
    "ci_onnx",
    "ci_onnx._data",
    "ci_onnx.contracts",
    "ci_onnx.contracts.bundle",
    "ci_onnx.contracts.defaults",
    "ci_onnx.contracts.errors",
    "ci_onnx.contracts.results",
    "ci_onnx.contracts.serde",
    "ci_onnx.contracts.target",
    "ci_onnx.contracts.tensorproto",
    "ci_onnx.contracts.triage_contract",
)
"""The modules of onnx-gate outside this package that an environment may import: the contracts an
observer reads (Target, Manifest) and writes (Observation), and what they stand on."""
