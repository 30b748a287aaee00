"""Write a bundle: test data sets as TensorProto files, and the manifest.

Importable without torch or onnx (the parent process writes the manifest of an export that crashed).
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import math
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ci_onnx.config import Config
from ci_onnx.contracts.bundle import (
    SCHEMA_VERSION,
    Manifest,
    SweepSet,
    TensorSpec,
    TestDataSet,
    hash_files,
    write_manifest,
)
from ci_onnx.contracts.provenance import build_id
from ci_onnx.contracts.results import CheckResult
from ci_onnx.contracts.target import Status
from ci_onnx.export import CHECKS

Arrays = Mapping[str, npt.NDArray[np.generic]]


def fresh_dir(path: Path) -> Path:
    """An empty bundle directory: stale files from an earlier export would be hashed into the manifest."""
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


def write_set(bundle_dir: Path, index: int, inputs: Arrays, outputs: Arrays) -> str:
    """test_data_set_<index>/input_<i>.pb and output_<i>.pb, in the given (declared) order."""
    return write_dir(bundle_dir, f"test_data_set_{index}", inputs, outputs)


def write_dir(bundle_dir: Path, directory: str, inputs: Arrays, outputs: Arrays) -> str:
    """``directory``/input_<i>.pb and output_<i>.pb: the test-data layout (a sweep point's too)."""
    from onnx import numpy_helper

    target = bundle_dir / directory
    target.mkdir(parents=True, exist_ok=True)
    for kind, arrays in (("input", inputs), ("output", outputs)):
        for i, (name, arr) in enumerate(arrays.items()):
            tensor = numpy_helper.from_array(np.asarray(arr, order="C"), name=name)  # 0-d stays 0-d
            (target / f"{kind}_{i}.pb").write_bytes(tensor.SerializeToString())
    return directory


def versions(*packages: str) -> dict[str, str]:
    out = {"onnx-gate": build_id()}
    for package in packages:
        try:
            out[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            out[package] = ""
    return out


EXPORT_PACKAGES = ("torch", "onnx", "onnxruntime", "onnxscript")


def skipped(name: str, reason: str) -> CheckResult:
    return CheckResult(name, Status.SKIPPED, reason)


NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}
"""How a non-finite figure is written: JSON has no NaN or Infinity, and a manifest must stay JSON."""


def json_safe(value: Any) -> Any:
    """``value`` with non-finite floats as strings and numpy scalars and arrays as plain Python."""
    if isinstance(value, np.ndarray):
        return json_safe(value.tolist())
    if isinstance(value, np.generic):
        return json_safe(value.item())
    if isinstance(value, float):
        return value if math.isfinite(value) else NON_FINITE[repr(value)]
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def complete(findings: Sequence[CheckResult], reason: str) -> tuple[CheckResult, ...]:
    """Every check in CHECKS order; the ones not run are skipped with ``reason``."""
    by_name = {f.name: f for f in findings}
    return tuple(by_name.get(name) or skipped(name, reason) for name in CHECKS)


def write(
    bundle_dir: Path,
    cfg: Config,
    *,
    exporter: str,
    requested_opset: int,
    findings: Sequence[CheckResult],
    opset: int = 0,
    ir_version: int = 0,
    inputs: Sequence[TensorSpec] | None = None,
    outputs: Sequence[TensorSpec] | None = None,
    dynamic_axes: Mapping[str, Mapping[str, str]] | None = None,
    test_data_sets: Sequence[TestDataSet] = (),
    node_count: int = 0,
    op_histogram: Mapping[str, int] | None = None,
    package_versions: Mapping[str, str] | None = None,
    precision: str = "fp32",
    sweep_sets: Sequence[SweepSet] = (),
) -> Manifest:
    """Hash what is in ``bundle_dir`` and write its manifest; fields that cannot be known stay neutral."""
    v = cfg.verify
    manifest = Manifest(
        schema_version=SCHEMA_VERSION,
        model_name=cfg.model.name,
        exporter=exporter,
        requested_opset=requested_opset,
        opset=opset,
        ir_version=ir_version,
        precision=precision,
        files=hash_files(bundle_dir),
        inputs=tuple(inputs if inputs is not None else cfg.model.inputs),
        outputs=tuple(outputs if outputs is not None else (TensorSpec(n, (), "") for n in cfg.model.outputs)),
        dynamic_axes={k: dict(a) for k, a in (dynamic_axes or cfg.model.dynamic_axes).items()},
        tolerance=v.tolerance,
        tolerance_per_output=dict(v.tolerance_per_output),
        decision=v.decision,
        batch_sizes=v.batch_sizes,
        test_data_sets=tuple(test_data_sets),
        findings=tuple(dataclasses.replace(f, figures=json_safe(f.figures)) for f in findings),
        node_count=node_count,
        op_histogram=dict(op_histogram or {}),
        versions=dict(package_versions or versions(*EXPORT_PACKAGES)),
        preprocessing=cfg.model.preprocessing,
        seed=v.seed,
        sweep_sets=tuple(sweep_sets),
    )
    write_manifest(bundle_dir, manifest)
    return manifest
