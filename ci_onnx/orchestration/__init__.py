"""The orchestration layer: `onnx-gate run` on one machine (localrun), what is unchanged since the
base (reuse, baseref) and `onnx-gate init`'s files (scaffold). The nightly is its own package."""
