"""The sample a triage looks at: the one the failure is worst on (for a decision, one whose decision
changed), cut from its test data set along the batch axis where the bundle declares one."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from ci_onnx.contracts.bundle import Manifest
from ci_onnx.observer import triage as triage_observer
from ci_onnx.triage import observers, walk
from ci_onnx.triage.request import Budget, Request, Stop


@dataclasses.dataclass(frozen=True)
class Picked:
    inputs: dict[str, np.ndarray]
    as_run: np.ndarray
    """The target's failing output on the sample, as the cell ran it."""
    torch_out: np.ndarray
    """The bundle's reference (PyTorch's) output on the sample."""
    which: str
    everywhere: tuple[np.ndarray, np.ndarray]
    """Both outputs over every test data set, flattened: what a tolerance must pass."""


def tolerance(manifest: Manifest, output: str) -> tuple[float, float]:
    tol = manifest.tolerance_per_output.get(output, manifest.tolerance)
    return tol.atol, tol.rtol


def inputs_of(manifest: Manifest, bundle: Path, directory: str) -> dict[str, np.ndarray]:
    from ci_onnx.contracts.tensorproto import Tensor
    from ci_onnx.observer import feeds

    got = feeds.read_inputs(manifest, bundle, directory)
    if not all(isinstance(v, Tensor) for v in got.values()):
        raise Stop("the model takes sequences, maps or optionals; triage compares tensors only")
    return {k: v.array for k, v in got.items() if isinstance(v, Tensor)}


def reference_output(manifest: Manifest, bundle: Path, directory: str, output: str) -> np.ndarray:
    from ci_onnx.contracts import tensorproto

    index = [s.name for s in manifest.outputs].index(output)
    return tensorproto.load_tensor(bundle / directory / f"output_{index}.pb").array


def pick(req: Request, manifest: Manifest, work: Path, budget: Budget) -> Picked:
    from ci_onnx.observer import feeds

    atol, rtol = tolerance(manifest, req.output)
    sets = {}
    for i, data_set in enumerate(manifest.test_data_sets):
        sets[data_set.directory] = work / f"set{i}"
        triage_observer.write_values(
            sets[data_set.directory], inputs_of(manifest, req.bundle, data_set.directory)
        )
    outputs = observers.as_run(req, manifest, sets, work, budget)
    # one sample is cut along axis 0 only: a model whose batch lies on another axis is triaged whole
    sliceable = (
        not feeds.batch_axis_problem(manifest)
        and feeds.on_axis_0(manifest)
        and req.output in feeds.batched_outputs(manifest)
    )
    best: tuple[float, str, int] | None = None
    everywhere = []
    for ds, got in outputs.items():
        ref = reference_output(manifest, req.bundle, ds, req.output)
        if got.shape != ref.shape:
            continue
        everywhere.append((got.reshape(-1), ref.reshape(-1)))
        for j in range(got.shape[0]) if sliceable and got.ndim else [-1]:
            g, r = (got, ref) if j < 0 else (got[j : j + 1], ref[j : j + 1])
            share = walk.error(g, r, atol, rtol).share
            if req.check == "decision" and g.ndim and g.shape[-1] > 1:
                share += 1e6 if bool(np.any(np.argmax(g, -1) != np.argmax(r, -1))) else 0.0
            if best is None or share > best[0]:
                best = (share, ds, j)
    if best is None:
        raise Stop("the target's runtime could not run any test data set while triaging")
    _, ds, j = best
    arrays = triage_observer.read_values(sets[ds])
    got, ref = outputs[ds], reference_output(manifest, req.bundle, ds, req.output)
    if j >= 0:
        arrays = {k: v[j : j + 1] for k, v in arrays.items()}
        got, ref = got[j : j + 1], ref[j : j + 1]
    if req.check != "decision" and not walk.error(got, ref, atol, rtol).out:
        raise Stop("the failure did not reproduce in the triage's own run of the target")
    which = f"sample {j} of {ds}" if j >= 0 else ds
    every = (np.concatenate([g for g, _ in everywhere]), np.concatenate([r for _, r in everywhere]))
    return Picked(arrays, got, ref, which, every)
