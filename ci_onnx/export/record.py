"""What an export read, observed, and whether it is still the same: the evidence behind every reuse.

The export child (ci_onnx/export/worker.py) records, through Python's audit hooks, every file it
opens and every module it imports while it imports the factory, builds the model, loads the weights
and exports (an ONNX-only model: its file and the external data its entries name, as onnx opens
them). At the end each file is keyed by where it lives:

- inside the repository (the git checkout holding the config): its sha256, by its path in it;
- inside the environment (site-packages, the standard library): the name and version of the
  distribution that installed it, or the interpreter's version; never hashed one by one;
- anywhere else (a download cache, an absolute path): its sha256, by its absolute path;
- a connection to another host: what came from there cannot be checked, so nothing is reused.

onnx-gate's own package is keyed by its build (its version and its files' digest) in the cache key,
not here; files the child wrote (the bundle, temporary files) are no input. The record travels in
the bundle (the export finding's ``inputs`` figure), the export cache stores it, and
:func:`changes` checks it: a reuse holds only when every recorded file hashes the same and every
recorded version is the same; what cannot be checked is a change (fail closed). Standard library
only: the plan checks records without torch.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import os
import site
import sys
import sysconfig
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ci_onnx.contracts.bundle import Manifest, sha256_of
from ci_onnx.contracts.results import CheckResult

TOOL = Path(__file__).resolve().parents[1]
"""onnx-gate's own package."""
FIGURE = "inputs"
"""The export finding's figure that holds the record."""
ENV_PARTS = frozenset({"site-packages", "dist-packages"})
NOT_INPUTS = (
    *("/dev/", "/proc/", "/sys/", "/usr/lib/os-release", "/usr/share/zoneinfo/", "/etc/os-release"),
    *("/etc/localtime", "/etc/ld.so.cache", "/etc/passwd", "/etc/group", "/etc/nsswitch.conf"),
    *("/etc/hosts", "/etc/resolv.conf", "/etc/host.conf", "/etc/gai.conf", "/etc/mime.types"),
)
"""The machine's own files (devices, its name, users, time zones, name lookup): no input of a
model. Any other file outside the repository and the environment is hashed."""
METADATA = (".dist-info", ".egg-info")


@dataclasses.dataclass(frozen=True)
class Record:
    files: dict[str, str]
    """Path in the repository (or absolute, outside it and the environment) → sha256."""
    distributions: dict[str, str]
    """Name → version of every distribution a read file or an imported module belongs to."""
    python: str
    """The interpreter's version: the standard library is keyed by it."""
    network: tuple[str, ...] = ()
    """The hosts the export connected to: what it fetched from them cannot be checked."""

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "files": self.files,
            "distributions": self.distributions,
            "python": self.python,
        }
        return {**data, "network": list(self.network)} if self.network else data

    @classmethod
    def from_json(cls, data: object) -> Record | None:
        """The record in ``data``, or None where it is not one (then nothing can be reused)."""
        if not isinstance(data, Mapping):
            return None
        files, dists, python = data.get("files"), data.get("distributions"), data.get("python")
        network = data.get("network", [])
        if not (isinstance(files, dict) and isinstance(dists, dict) and isinstance(python, str)):
            return None
        if not isinstance(network, list):
            return None
        return cls(dict(files), dict(dists), python, tuple(str(n) for n in network))


def repository_of(start: Path) -> Path:
    """The git checkout holding ``start`` (its top directory), else ``start`` itself."""
    start = start.resolve()
    for d in (start, *start.parents):
        if (d / ".git").exists():
            return d
    return start


class Recorder:
    """Collects what this process opens for reading and imports, from :meth:`start` on."""

    def __init__(self) -> None:
        self.opened: set[str] = set()
        self.written: set[str] = set()
        self.imported: set[str] = set()
        self.network: set[str] = set()
        self.on = False

    def start(self) -> Recorder:
        self.on = True
        sys.addaudithook(self._hook)  # a hook cannot be removed: ``stop`` turns it off
        return self

    def stop(self) -> None:
        self.on = False

    def _hook(self, event: str, args: tuple[Any, ...]) -> None:
        if not self.on:
            return
        if event == "open" and args and isinstance(args[0], (str, bytes, os.PathLike)):
            path, mode, flags = (*args, None, None)[:3]
            name = os.fsdecode(path)
            writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT)
            )
            (self.written if writes else self.opened).add(os.path.abspath(name))
        elif event == "import" and args and isinstance(args[0], str):
            self.imported.add(args[0])
        elif event == "socket.connect" and len(args) > 1 and isinstance(args[1], tuple):
            self.network.add(":".join(str(part) for part in args[1][:2]))  # an inet address, not a path

    def add(self, paths: Iterable[Path]) -> None:
        """Files read where no hook sees them (onnx's C++ loader reads external data)."""
        self.opened |= {os.path.abspath(p) for p in paths}

    def record(self, root: Path, exclude: Iterable[Path] = ()) -> Record:
        """What was read, keyed as the module's docstring says; ``exclude``: directories whose files
        are no input (the bundle). onnx-gate's own package is never recorded (the key holds its
        version)."""
        self.stop()
        paths = set(self.opened)
        for name in {*self.imported, *sys.modules}:
            module = sys.modules.get(name)
            file = getattr(module, "__file__", None) if module is not None else None
            if isinstance(file, str):
                paths.add(os.path.abspath(file))
        found = keyed(paths - self.written, root, [*exclude, TOOL])
        return dataclasses.replace(found, network=tuple(sorted(self.network)))


def keyed(paths: Iterable[str], root: Path, exclude: Iterable[Path] = ()) -> Record:
    """``paths`` keyed by where they live: hashed in the repository and outside the environment, by
    distribution and interpreter version inside it."""
    root = root.resolve()
    skip = [str(p.resolve()) + os.sep for p in exclude]
    scratch = str(Path(tempfile.gettempdir()).resolve()) + os.sep
    prefixes = _environment_prefixes()
    owners = importlib.metadata.packages_distributions()
    files: dict[str, str] = {}
    dists: dict[str, str] = {}
    for text in sorted(paths):
        if text.startswith(NOT_INPUTS) or "__pycache__" in text or any(text.startswith(s) for s in skip):
            continue
        path = Path(text)
        if not path.is_file():
            continue
        resolved = str(path.resolve())
        if any(resolved.startswith(s) for s in skip):
            continue
        if resolved.startswith(scratch) and not resolved.startswith(str(root) + os.sep):
            continue  # the export's own scratch files (a repository may live there, as tests' do)
        owner = _environment_owner(Path(resolved), prefixes, owners)
        if owner == "python":
            continue  # the standard library: the interpreter's version, recorded once
        if isinstance(owner, dict):
            dists.update(owner)
            continue
        files[_name(Path(resolved), root)] = sha256_of(Path(resolved))
    return Record(files, dict(sorted(dists.items())), sys.version.split()[0])


def changes(record: Record, root: Path, limit: int = 0) -> list[str]:
    """What differs now from ``record``, one phrase each ("src/mylib/layers.py changed"); empty when
    everything it names is the same. ``limit``: stop after so many (0: all)."""
    found: list[str] = []
    root = root.resolve()
    if record.network:
        found.append(
            f"its export reached the network ({', '.join(record.network)}): what it fetched cannot be checked"
        )
    if record.python != sys.version.split()[0]:
        found.append(f"Python {record.python} → {sys.version.split()[0]}")
    for name, version in record.distributions.items():
        now = _version(name)
        if now != version:
            found.append(f"{name} {version} → {now}" if now else f"{name} {version} is not installed here")
        if limit and len(found) >= limit:
            return found
    for name, digest in record.files.items():
        path = Path(name) if Path(name).is_absolute() else root / name
        try:
            same = sha256_of(path) == digest
        except OSError:
            found.append(f"{name} is gone")
        else:
            if not same:
                found.append(f"{name} changed")
        if limit and len(found) >= limit:
            return found
    return found


def external_data(model: Path) -> list[Path]:
    """The files an ONNX model's external-data entries name, whatever they are called
    (``model.onnx_data``, ``weights.bin``); imports onnx (the export child's)."""
    import onnx
    from onnx.external_data_helper import ExternalDataInfo, _get_all_tensors, uses_external_data

    proto = onnx.load(str(model), load_external_data=False)
    found = {ExternalDataInfo(t).location for t in _get_all_tensors(proto) if uses_external_data(t)}
    return [model.parent / name for name in sorted(found)]


def summary(reasons: list[str]) -> str:
    """The first reason, and how many more."""
    if not reasons:
        return ""
    more = f" (and {len(reasons) - 1} more)" if len(reasons) > 1 else ""
    return f"{reasons[0]}{more}"


def _environment_prefixes() -> list[str]:
    found = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    found |= {sysconfig.get_paths().get(k, "") for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    found |= set(site.getsitepackages()) | {site.getusersitepackages()}
    return sorted({str(Path(p).resolve()) + os.sep for p in found if p})


def _environment_owner(
    path: Path, prefixes: list[str], owners: Mapping[str, list[str]]
) -> dict[str, str] | str:
    """``{distribution: version}`` for a file a distribution installed, "python" for the standard
    library, "" for a file outside the environment (or one no distribution claims: hashed)."""
    parts = path.parts
    meta = next((p for p in parts[:-1] if p.endswith(METADATA)), "")
    if meta:  # a distribution's metadata (entry points, its version): read by importlib.metadata
        name = meta.rsplit(".", 1)[0].split("-", 1)[0]
        return {name: _version(name)} if _version(name) else ""
    where = next((i for i, p in enumerate(parts) if p in ENV_PARTS), -1)
    if where >= 0 and where + 1 < len(parts):
        top = parts[where + 1]
        if top.startswith("__editable__"):
            return "python"  # an editable install's finder: the package's own files are recorded
        names = owners.get(top.removesuffix(".py").split(".")[0], [])
        return {n: _version(n) for n in names} if names else ""
    text = str(path)
    if any(text.startswith(p) for p in prefixes):
        return "python"
    return ""


def _name(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def _version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return ""


def attach(manifest: Manifest, record: Record) -> Manifest:
    """``manifest`` with ``record`` in its export finding (where every copy of the bundle keeps it)."""

    def put(f: CheckResult) -> CheckResult:
        return (
            dataclasses.replace(f, figures={**f.figures, FIGURE: record.to_json()})
            if f.name == "export"
            else f
        )

    return dataclasses.replace(manifest, findings=tuple(put(f) for f in manifest.findings))


def of_findings(findings: Iterable[CheckResult]) -> Record | None:
    """The record an export finding holds, or None (an older bundle, a crash: nothing to reuse)."""
    export = next((f for f in findings if f.name == "export"), None)
    return Record.from_json(export.figures.get(FIGURE)) if export is not None else None
