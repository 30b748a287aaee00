"""The Bundle: one exported model with its inputs and PyTorch reference outputs, and its manifest.

Layout (the ONNX test-data layout, readable by onnx.numpy_helper and ORT's test runner)::

    model.onnx [+ model.onnx.data]
    test_data_set_0/input_0.pb … output_0.pb    TensorProto; inputs and reference outputs
    sweep_seq_7/input_0.pb … output_0.pb        the same layout, at one sweep point (schema 2 on)
    manifest.json                               Manifest, below

A runner that reads only ``test_data_sets`` reads a schema-2 bundle as it read schema 1: the sweep
points are extra directories, listed apart in ``sweep_sets``.

Everything after export reads a bundle without torch, and without onnx: runners in other languages
read the same files (see ci_onnx/schemas/manifest.schema.json).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ci_onnx.contracts import defaults, serde
from ci_onnx.contracts.errors import BundleError
from ci_onnx.contracts.results import CheckResult

SCHEMA_VERSION = 2
READS = (1, 2)
"""The manifest versions this onnx-gate reads: 1 is 2 without ``sweep_sets``."""
MANIFEST = "manifest.json"
MODEL = "model.onnx"


@dataclasses.dataclass(frozen=True)
class TensorSpec:
    """An input or output as declared: symbolic dims are strings (``batch``), fixed ones integers."""

    name: str
    shape: tuple[int | str, ...]
    dtype: str
    value_range: tuple[float, float] | None = None
    """For integer inputs such as token ids: the half-open range random values are drawn from."""


BATCH_NAMES = ("batch", "batch_size", "bs", "n", "N", "B")
"""Names a batch symbol goes by, to choose among several symbols every input carries."""


def dims(
    spec: TensorSpec, dynamic_axes: Mapping[str, Mapping[str, str]] | None = None
) -> tuple[int | str, ...]:
    """``spec``'s dims, each axis a dynamic_axes entry declares named by it (a symbol), else as written."""
    declared = (dynamic_axes or {}).get(spec.name, {})
    return tuple(declared.get(str(axis), dim) for axis, dim in enumerate(spec.shape))


def batch_symbol(
    inputs: Sequence[TensorSpec], dynamic_axes: Mapping[str, Mapping[str, str]] | None = None
) -> str:
    """The one dim symbol that carries the batch in every input ("" where none does), on any axis.

    The symbol of axis 0 where every input's axis 0 is the same symbol; else the one symbol every
    input carries exactly once that is named like a batch (:func:`batch_like`: a seq-first RNN's
    ``x: [seq, batch, f]`` and ``h0: [layers, batch, h]``). A symbol that is merely shared (a
    ``seq`` of ``ids: [batch, seq]`` and ``positions: [seq]``) is never taken for the batch: slicing
    along it would compare different computations. The one rule every part of the gate binds sizes,
    splits, stacks and compares by."""
    named = [d for d in (dims(s, dynamic_axes) for s in inputs) if d]  # a 0-d input or a sequence: none
    if not named:
        return ""
    firsts = {d[0] for d in named}
    if len(firsts) == 1 and isinstance(first := firsts.pop(), str):
        return first
    common = set.intersection(*({d for d in ds if isinstance(d, str) and ds.count(d) == 1} for ds in named))
    liked = sorted(c for c in common if batch_like(c))
    return liked[0] if len(liked) == 1 else ""


def batch_like(symbol: str) -> bool:
    """Whether a dim symbol is named like a batch: one of :data:`BATCH_NAMES`, or holding "batch"."""
    return symbol in BATCH_NAMES or "batch" in symbol.lower()


def batch_axis(
    spec: TensorSpec, symbol: str, dynamic_axes: Mapping[str, Mapping[str, str]] | None = None
) -> int | None:
    """The axis of ``spec`` that carries ``symbol``: None where it carries it on no axis or on several
    (an output ``[batch, batch]`` depends on the whole batch and is compared whole)."""
    if not symbol:
        return None
    found = [axis for axis, dim in enumerate(dims(spec, dynamic_axes)) if dim == symbol]
    return found[0] if len(found) == 1 else None


@dataclasses.dataclass(frozen=True)
class Tolerance:
    atol: float = float(defaults.of("verify.tolerance.atol"))
    rtol: float = float(defaults.of("verify.tolerance.rtol"))


@dataclasses.dataclass(frozen=True)
class Decision:
    """A hard assertion: the top-k classes of ``output`` (along its last axis) must not change."""

    output: str
    top_k: int = 1


@dataclasses.dataclass(frozen=True)
class Preprocessing:
    mean: tuple[float, ...] = ()
    std: tuple[float, ...] = ()
    channel_order: str = ""
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class TestDataSet:
    """One ``test_data_set_N`` directory: ``random`` inputs or real ``sample`` inputs, stacked on axis 0."""

    __test__ = False  # not a pytest class

    directory: str
    kind: str
    count: int


@dataclasses.dataclass(frozen=True)
class SweepSet:
    """One sweep point: inputs where every axis declared as ``symbol`` has ``size`` (the others at their
    export size), with the reference outputs computed at export for exactly these inputs."""

    directory: str
    """``sweep_<symbol>_<size>``, in the test-data layout; empty where no reference could be made."""
    symbol: str
    size: int
    count: int
    """Samples stacked on the batch axis (the items of its throughput)."""
    export_size: int
    """The symbol's size in the export example (the traced size)."""
    declared: bool = False
    """Written in verify.sweeps (else a default point)."""
    error: str = ""
    """Why the reference could not be computed at this point (PyTorch itself fails there). With a
    ``directory`` too, it holds the inputs alone: each target runs them (an ONNX-only graph that
    refuses a size of a symbolic dim fails there), and has nothing to compare them with."""

    @property
    def label(self) -> str:
        """``seq=7``: the check is ``sweep[seq=7]``, the budget key ``seq=7``."""
        return f"{self.symbol}={self.size}"


@dataclasses.dataclass(frozen=True)
class Manifest:
    """What an export produced, read back from the file itself rather than from the request."""

    schema_version: int
    model_name: str
    exporter: str
    requested_opset: int
    opset: int
    """The default-domain opset written in model.onnx."""
    ir_version: int
    precision: str
    files: dict[str, str]
    """sha256 of every file of the bundle but the manifest, by path relative to the bundle."""
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    dynamic_axes: dict[str, dict[str, str]]
    """input or output name → axis index (as a string, JSON keys) → symbolic name."""
    tolerance: Tolerance
    tolerance_per_output: dict[str, Tolerance]
    decision: Decision | None
    batch_sizes: tuple[int, ...]
    test_data_sets: tuple[TestDataSet, ...]
    findings: tuple[CheckResult, ...]
    """The export-time checks; each becomes a JUnit testcase in every target's report."""
    node_count: int
    op_histogram: dict[str, int]
    versions: dict[str, str]
    """torch, onnx, onnxruntime, onnxscript, onnx-gate: what made this bundle."""
    preprocessing: Preprocessing | None = None
    seed: int = 0
    sweep_sets: tuple[SweepSet, ...] = ()
    """The sweep points of the dynamic dims other than the batch axis (schema 2 on; none in 1)."""

    def tolerance_for(self, output: str) -> Tolerance:
        return self.tolerance_per_output.get(output, self.tolerance)

    @property
    def export_failed(self) -> bool:
        return any(f.status.failing for f in self.findings)


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def hash_files(bundle_dir: Path) -> dict[str, str]:
    """sha256 of every file below ``bundle_dir`` except the manifest, sorted by relative path."""
    return {
        p.relative_to(bundle_dir).as_posix(): sha256_of(p)
        for p in sorted(bundle_dir.rglob("*"))
        if p.is_file() and p.name != MANIFEST
    }


def write_manifest(bundle_dir: Path, manifest: Manifest) -> Path:
    path = bundle_dir / MANIFEST
    path.write_text(serde.dumps(manifest))
    return path


def read_manifest(bundle_dir: Path, *, verify_hashes: bool = True) -> Manifest:
    """Read and check a bundle's manifest; a missing file or a sha256 mismatch is a BundleError."""
    path = bundle_dir / MANIFEST
    if not path.is_file():
        raise BundleError(f"{bundle_dir}: no {MANIFEST}; is this a bundle written by `onnx-gate export`?")
    try:
        data: Any = json.loads(path.read_bytes())
        manifest = serde.from_json(Manifest, data)
    except (OSError, ValueError, TypeError, KeyError, RecursionError) as exc:
        text = str(exc)[:300] or type(exc).__name__
        raise BundleError(f"{path}: not a valid manifest ({text}); re-run `onnx-gate export`") from None
    if manifest.schema_version not in READS:
        hint = (
            "upgrade onnx-gate" if manifest.schema_version > SCHEMA_VERSION else "re-run `onnx-gate export`"
        )
        raise BundleError(
            f"{path}: manifest schema_version {manifest.schema_version} is not the one this onnx-gate "
            f"reads ({', '.join(map(str, READS))}); {hint}"
        )
    check_manifest(manifest, bundle_dir, path)
    if verify_hashes:
        for rel, expected in manifest.files.items():
            f = bundle_dir / rel
            if not f.is_file():
                raise BundleError(f"{bundle_dir}: {rel} is listed in the manifest but missing")
            if sha256_of(f) != expected:
                raise BundleError(
                    f"{bundle_dir}: {rel} does not match its sha256 in the manifest (corrupted or edited "
                    "after export); re-run `onnx-gate export`"
                )
    return manifest


def confined(root: Path, rel: str, what: str) -> Path:
    """``root / rel``, refused unless ``rel`` is relative, has no ``..``, and (following symlinks)
    stays inside ``root``: a bundle or an artifact may name only its own files."""
    pure = Path(rel)
    if not rel or "\x00" in rel or pure.is_absolute() or rel.startswith(("/", "\\")) or ".." in pure.parts:
        raise BundleError(
            f"{root}: {what} {rel!r} is not a path inside the directory; re-run `onnx-gate export`"
        )
    path = root / pure
    try:
        inside = path.resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError, ValueError):
        inside = False
    if not inside:
        raise BundleError(
            f"{root}: {what} {rel!r} leads outside the directory (a symlink?); re-run `onnx-gate export`"
        )
    return path


def confine_tree(root: Path) -> None:
    """Refuse a bundle holding any link that leads outside it, listed in the manifest or not: a runner
    opens files the manifest need not list (an input by its index, external data the model names)."""
    for here, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            path = Path(here) / name
            if path.is_symlink():
                confined(root, path.relative_to(root).as_posix(), "file")


def unencodable(manifest: Manifest) -> str:
    """Where the manifest holds text that no UTF-8 file can carry (a lone surrogate, which JSON's
    ``\\ud800`` escape can spell but no ONNX name can hold), as ``outputs[0].name``; '' if nowhere."""

    def walk(value: Any, where: str) -> str:
        if isinstance(value, str):
            return "" if _encodable(value) else where
        items: list[tuple[str, Any]] = []
        if isinstance(value, dict):
            for k, v in value.items():
                key = str(k)
                if not _encodable(key):
                    return f"{where}[{key!a}]".lstrip(".")
                items.append((f"{where}.{key}", v))
        elif isinstance(value, (list, tuple)):
            items = [(f"{where}[{i}]", v) for i, v in enumerate(value)]
        for here, v in items:
            found = walk(v, here)
            if found:
                return found.lstrip(".")
        return ""

    return walk(dataclasses.asdict(manifest), "")


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_tolerance(tol: Tolerance, where: str) -> None:
    for name in ("atol", "rtol"):
        value = getattr(tol, name)
        if not (isinstance(value, float) and math.isfinite(value) and value >= 0):
            raise BundleError(
                f"{where}.{name}: {value!r} is not a finite, non-negative number; re-run `onnx-gate export`"
            )


def check_manifest(manifest: Manifest, bundle_dir: Path, path: Path) -> None:
    """What the JSON types cannot say: paths confined to the bundle, numbers in range."""
    for rel in manifest.files:
        confined(bundle_dir, rel, "manifest.files entry")
    for sw in manifest.sweep_sets:
        if sw.directory:
            confined(bundle_dir, sw.directory, "sweep set")
        if sw.count < 1 or sw.size < 1:
            raise BundleError(f"{path}: sweep_sets {sw.label}: count and size must be positive")
    for ds in manifest.test_data_sets:
        confined(bundle_dir, ds.directory, "test data set")
        if ds.count < 0:
            raise BundleError(f"{path}: test_data_sets {ds.directory}: count {ds.count} is negative")
    for name in (MODEL, MODEL + ".data"):
        if (bundle_dir / name).exists() or (bundle_dir / name).is_symlink():
            confined(bundle_dir, name, "file")
    confine_tree(bundle_dir)
    check_tolerance(manifest.tolerance, f"{path}: tolerance")
    for out, tol in manifest.tolerance_per_output.items():
        check_tolerance(tol, f"{path}: tolerance_per_output.{out}")
    if manifest.decision is not None and manifest.decision.top_k < 1:
        raise BundleError(f"{path}: decision.top_k {manifest.decision.top_k} must be at least 1")
    bad = [b for b in manifest.batch_sizes if b < 1]
    if bad:
        raise BundleError(f"{path}: batch_sizes {bad} must be positive integers")
