"""Put the target's runtime into the environment a verify step runs in.

A verify environment holds exactly one onnxruntime flavour (``onnxruntime`` and
``onnxruntime-openvino`` install the same module and overwrite each other), at the release the target
names. The action's image and the composite action's venv start with a default onnxruntime; this swaps
it for the target's package and version before ``onnx-gate verify`` imports it.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Sequence
from importlib import metadata

from ci_onnx import matrix
from ci_onnx.contracts import proc
from ci_onnx.contracts.errors import UsageError
from ci_onnx.contracts.target import Target

INSTALL_TIMEOUT_S = 900


@dataclasses.dataclass(frozen=True)
class RuntimeChange:
    """What to uninstall and install so that only ``requirements`` is the runtime present."""

    uninstall: tuple[str, ...]
    requirements: tuple[str, ...]

    @property
    def needed(self) -> bool:
        return bool(self.uninstall or self.requirements)


def flavours() -> tuple[str, ...]:
    """Every pip distribution that carries an onnxruntime module, from the provider table."""
    return tuple(sorted({info.package for info in matrix.providers().values()}))


def installed(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return ""


def plan_change(target_id: str, installed_version: Callable[[str], str] = installed) -> RuntimeChange:
    """What must change for ``target_id``'s runtime to be the only one installed."""
    target = Target.from_id(target_id)
    kind = matrix.runners().get(target.runner)
    if kind is None or not kind.can.interpreter:
        return RuntimeChange((), ())  # not a Python package: its runner kind provisions it (npm)
    info = matrix.providers().get(target.provider)
    if info is None:
        raise UsageError(
            f"target {target_id!r}: unknown provider {target.provider!r}; "
            f"known: {', '.join(matrix.providers())}"
        )
    others = tuple(p for p in flavours() if p != info.package and installed_version(p))
    if installed_version(info.package) == target.runtime and not others:
        return RuntimeChange((), ())
    requirements = [f"{info.package}=={target.runtime}"]
    numpy = matrix.caps_for(target.runtime).numpy
    if numpy:
        requirements.append(f"numpy{numpy}")
    return RuntimeChange(others, tuple(requirements))


def plan_change_for(
    target_ids: Sequence[str], installed_version: Callable[[str], str] = installed
) -> RuntimeChange:
    """The one change that serves every target of a verify job: the plan groups one environment's
    targets into one job, so every target that runs on Python asks for the same package and release."""
    wanted: dict[tuple[str, str], str] = {}
    for target_id in target_ids:
        change = plan_change(target_id, installed_version=lambda _package: "")  # what it asks for
        for requirement in change.requirements[:1]:
            package, _, version = requirement.partition("==")
            wanted.setdefault((package, version), target_id)
    if len(wanted) > 1:
        asked = "; ".join(f"{t} needs {p}=={v}" for (p, v), t in wanted.items())
        raise UsageError(
            f"input target: these targets need different runtimes ({asked}); verify each environment's "
            "targets in a job of their own, as the plan's matrix groups them"
        )
    return plan_change(next(iter(wanted.values())), installed_version) if wanted else RuntimeChange((), ())


def apply(change: RuntimeChange, python: str = sys.executable) -> None:
    """Uninstall the other flavours and install the requirements with pip; a failure is an error (3)."""
    pip = [python, "-m", "pip", "--disable-pip-version-check"]
    if change.uninstall:
        proc.run(
            [*pip, "uninstall", "-y", *change.uninstall],
            timeout=INSTALL_TIMEOUT_S,
            check=True,
            what=f"pip uninstall {' '.join(change.uninstall)}",
        )
    if change.requirements:
        proc.run(
            [*pip, "install", "--upgrade", *change.requirements],
            timeout=INSTALL_TIMEOUT_S,
            check=True,
            what=f"pip install {' '.join(change.requirements)}",
        )
