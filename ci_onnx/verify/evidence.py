"""The tensors the judge compares, read from disk at the verify stage's edge.

The judge (ci_onnx.verify.judge) reads no file: it takes an :class:`Evidence`, the bundle's
reference outputs and a runner's observed ones, already decoded. :func:`load` builds it from a
bundle directory and an observation directory; a later comparison against another bundle (the base
branch's outputs, say) builds its own Evidence and hands it to the same judge.

A file that does not decode is kept as an :class:`Unreadable` in its place, so the judge decides what
it means there: a failed parity check for that data set, or (where a comparison needs it) an error
of the whole target.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ci_onnx.contracts.bundle import Manifest
from ci_onnx.contracts.labels import label_file
from ci_onnx.contracts.results import Observation
from ci_onnx.verify import decode


@dataclasses.dataclass(frozen=True)
class Unreadable:
    """A file that could not be decoded; ``message`` names it and why (decode.DecodeError's text)."""

    message: str


@dataclasses.dataclass(frozen=True)
class Evidence:
    """Decoded values (ndarray, list, dict or None, as ci_onnx.verify.decode gives them), or
    :class:`Unreadable`, keyed like the Observation's file maps."""

    reference: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    """Test data set directory → output name → the bundle's reference output (from the export)."""
    observed: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    """Test data set directory → output name → what the runner's session returned."""
    batch: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    """Served batch size (as a string) → output name → the outputs of one run at that batch size."""
    batch_reference: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    """Output name → the single (batch 1) runs that each served batch size must reproduce."""
    labels: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    """Test data set directory → output name → the bundle's labels of its samples (class indices)."""
    all_reference: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    """Test data set directory → output name → the reference of each labelled output, observed or not."""
    optcache: Any = None
    """The python runner's optimized-model cache record (optcache.json), Unreadable, or None."""
    cached: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    """Test data set directory → output name → the outputs of the cached optimized graph."""
    sweep: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    """Sweep set directory → output name → what the runner's session returned at that point."""
    sweep_reference: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    """Sweep set directory → output name → the bundle's reference at that point."""


def value(found: Any) -> Any:
    """``found`` itself, or the decode error it stands for, raised."""
    if isinstance(found, Unreadable):
        raise decode.DecodeError(found.message)
    return found


def _read(path: Path, type_str: str) -> Any:
    try:
        return decode.load(path, type_str)
    except decode.DecodeError as exc:
        return Unreadable(str(exc))


def load(manifest: Manifest, obs: Observation, bundle_dir: Path, obs_dir: Path) -> Evidence:
    """Every output the judge may compare: each declared output of each test data set (the bundle's
    ``output_<i>.pb`` and the runner's file), each served batch and the batch reference.

    The observation's paths are taken as they are: the verify stage confines them to ``obs_dir`` first.
    """
    specs = {spec.name: (i, spec.dtype) for i, spec in enumerate(manifest.outputs)}
    reference: dict[str, dict[str, Any]] = {}
    observed: dict[str, dict[str, Any]] = {}
    for ds in manifest.test_data_sets:
        got = obs.outputs.get(ds.directory, {})
        reference[ds.directory] = {
            name: _read(bundle_dir / ds.directory / f"output_{i}.pb", dtype)
            for name, (i, dtype) in specs.items()
            if name in got
        }
        observed[ds.directory] = {
            name: _read(obs_dir / got[name], dtype) for name, (_, dtype) in specs.items() if name in got
        }
    batch = {
        n: {name: _read(obs_dir / rel, specs[name][1]) for name, rel in files.items() if name in specs}
        for n, files in obs.batch_outputs.items()
    }
    batch_reference = {
        name: _read(obs_dir / rel, specs[name][1])
        for name, rel in obs.batch_reference.items()
        if name in specs
    }
    labels: dict[str, dict[str, Any]] = {}
    labelled_reference: dict[str, dict[str, Any]] = {}
    for ds in manifest.test_data_sets:
        for name, (i, dtype) in specs.items():
            if f"{ds.directory}/{label_file(i)}" in manifest.files:
                labels.setdefault(ds.directory, {})[name] = _read(
                    bundle_dir / ds.directory / label_file(i), ""
                )
                labelled_reference.setdefault(ds.directory, {})[name] = _read(
                    bundle_dir / ds.directory / f"output_{i}.pb", dtype
                )
    optcache, cached = _optcache(obs_dir, specs)
    sweep, sweep_reference = {}, {}
    for sw in manifest.sweep_sets:
        got = obs.sweep_outputs.get(sw.directory, {}) if sw.directory and not sw.error else {}
        sweep[sw.directory] = {n: _read(obs_dir / got[n], specs[n][1]) for n in got if n in specs}
        sweep_reference[sw.directory] = {
            n: _read(bundle_dir / sw.directory / f"output_{i}.pb", dtype)
            for n, (i, dtype) in specs.items()
            if n in got
        }
    return Evidence(
        reference,
        observed,
        batch,
        batch_reference,
        labels,
        labelled_reference,
        optcache,
        cached,
        sweep=sweep,
        sweep_reference=sweep_reference,
    )


def _optcache(obs_dir: Path, specs: Mapping[str, tuple[int, str]]) -> tuple[Any, dict[str, dict[str, Any]]]:
    """The cache record the python runner left, and the outputs of the cached graph it names."""
    from ci_onnx.contracts.bundle import confined
    from ci_onnx.contracts.errors import BundleError
    from ci_onnx.observer.optcache import FILE

    path = obs_dir / FILE
    if not path.is_file():
        return None, {}
    try:
        record = json.loads(path.read_text())
        if not isinstance(record, dict):
            raise ValueError("not an object")
    except (OSError, ValueError) as exc:
        return Unreadable(f"the runner wrote an unreadable {FILE} ({exc})"), {}
    cached: dict[str, dict[str, Any]] = {}
    for directory, files in (record.get("outputs") or {}).items():
        for name, rel in (files or {}).items():
            if name not in specs:
                continue
            try:
                where = confined(obs_dir, rel, "cached output")
            except BundleError as exc:
                cached.setdefault(directory, {})[name] = Unreadable(str(exc))
                continue
            cached.setdefault(directory, {})[name] = _read(where, specs[name][1])
    return record, cached
