"""Runners: code that executes INSIDE a target environment and only observes.

A runner loads a bundle on one runtime and writes an Observation (observation.json) plus the raw
outputs as TensorProto files; it draws no verdict. Runners import the standard library, numpy and
their runtime only, never onnx, torch or click (the environment holds nothing else).
"""
