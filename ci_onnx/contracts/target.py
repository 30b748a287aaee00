"""One cell of the matrix, and the vocabulary of verdicts.

A Target is frozen and named by a readable id that holds everything needed to rebuild it
(``ort1.20.1-cpu-op17-dynamo``, ``ort1.24.1-openvino-op18-torchscript-fp16``), so a single cell can
be reproduced from its id alone: ``onnx-gate verify --target ID``. A runner other than Python
prefixes the id with its kind (``node-ort1.24.1-cpu-op17-dynamo``); Python ids have no prefix. A
session-options preset other than the runtime's default ends the id (``…-op17-dynamo-so-no_opt``).
An android cell names its API level after the kind (``android-api34-ort1.29.0-nnapi-op17-dynamo``).
A kind that runs another engine than onnxruntime names that engine and its release instead of
``ort`` (``openvino2026.4.1-cpu-op17-dynamo``, ``tract0.23.9-cpu-op17-dynamo``): its releases are
the engine's own.

A model of a ``models`` config starts the id with its name and a dot
(``minilm.ort1.24.1-cpu-op17-dynamo``), and so its bundle key (``minilm.op17-dynamo``): a dot is
safe in file names, artifact names and shells, cannot be in a name, and no id without a model has
one before its runtime's version, so the id reads back unambiguously. The single ``model`` form's
ids have no name, as they always had.
"""

from __future__ import annotations

import dataclasses
import enum
import re

from ci_onnx.contracts.errors import UsageError

SCHEMA_VERSION = 1

EXPORTERS = ("dynamo", "torchscript", "onnx")
"""``onnx`` is the exporter of a model that arrived as ONNX (no torch involved)."""

PRECISIONS = ("fp32", "fp16", "int8-dynamic", "int8-static")
"""Every precision a cell may have, fp32 first: the others are derived from its export."""
DERIVED_PRECISIONS = PRECISIONS[1:]


class Status(enum.StrEnum):
    """The verdict of a check or a target."""

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"  # the target could not be judged: a crash, a hang, an environment that failed
    SKIPPED = "skipped"  # not run, with the reason why
    EXPECTED = "expected"  # planned as unable to work (opset too new for the runtime); not a failure
    MISSING = "missing"  # only the report says it: a planned target whose result never arrived

    @property
    def failing(self) -> bool:
        """A check or target that failed, errored or never reported. Whether that blocks the merge
        is not its own to say: ci_onnx.report.gate decides (an expected or a known failure does not)."""
        return self in (Status.FAILED, Status.ERROR, Status.MISSING)


DEFAULT_SESSION_OPTIONS = "default"
"""The preset of matrix/session_options.toml that is the runtime's own defaults: not in the id."""

DEFAULT_RUNNER = "python"
"""The runner kind whose ids carry no prefix (the ids onnx-gate wrote before runners were an axis)."""

ENGINE_RUNNERS = ("openvino", "tract")
"""The runner kinds whose releases are another engine's (runners.toml rows with ``releases``): their
ids start with the engine and its release, not ``ort`` (a test ties this to the table)."""

RELEASE = r"\d+\.\d+(?:\.\d+)?(?:[.+_a-zA-Z0-9]*?)?"
"""A runtime release as ids carry it: 1.20.1, 1.25.0.dev20260101, 1.24.1+cu12."""
_PARTS = {
    "runtime": re.compile(rf"^{RELEASE}$"),
    "provider": re.compile(r"^[a-z0-9]+$"),
    "runner": re.compile(r"^[a-z][a-z0-9]*$"),
    "session_options": re.compile(r"^[a-z][a-z0-9_]*$"),
    "model": re.compile(r"^(?:[A-Za-z][A-Za-z0-9_-]{0,39})?$"),
}
"""The grammar of each part of an id: what a plan, a result or a device may say is checked against it
before it reaches a path, a shell or Markdown."""
PART_MAX = 64
"""The longest a part of an id may be."""
_ID = re.compile(
    r"^(?:(?P<model>[A-Za-z][A-Za-z0-9_-]{0,39})\.)?"
    r"(?:(?P<runner>[a-z][a-z0-9]*)-)?(?:api(?P<api_level>\d+)-)?"
    rf"(?:ort|(?P<engine>{'|'.join(ENGINE_RUNNERS)}))(?P<runtime>{RELEASE})-(?P<provider>[a-z0-9]+)-op(?P<opset>\d+)"
    rf"-(?P<exporter>[a-z]+)(?:-(?P<precision>{'|'.join(DERIVED_PRECISIONS)}))?"
    r"(?:-so-(?P<session>[a-z][a-z0-9_]*))?$"
)


@dataclasses.dataclass(frozen=True, order=True)
class Target:
    """One cell of the matrix: a runtime release, an execution provider, an opset, an exporter."""

    runtime: str
    """The resolved onnxruntime release (the flavour package's version for e.g. openvino)."""
    provider: str
    """A key of matrix/providers.toml: cpu, openvino, cuda, tensorrt, …"""
    opset: int
    exporter: str
    precision: str = "fp32"
    runtime_spec: str = ""
    """What the config asked for (``1.24.*``, ``latest``); empty when it was an exact version."""
    expected_skip: str = ""
    """Why this cell cannot work, when the plan knows it in advance; empty otherwise."""
    runner: str = DEFAULT_RUNNER
    """A key of matrix/runners.toml: the runner kind that observes the bundle (python, node)."""
    session_options: str = DEFAULT_SESSION_OPTIONS
    """A session-options preset (matrix/session_options.toml or targets.session_presets)."""
    api_level: int = 0
    """The Android API level an android cell runs at (targets.android.api_level); 0 for other kinds."""
    model: str = ""
    """The model's name in a ``models`` config; empty for the single ``model`` form."""

    def __post_init__(self) -> None:
        if self.exporter not in EXPORTERS:
            raise ValueError(f"unknown exporter {self.exporter!r}; expected one of {EXPORTERS}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"unknown precision {self.precision!r}; expected one of {PRECISIONS}")
        for name, grammar in _PARTS.items():
            value = getattr(self, name)
            if not (isinstance(value, str) and len(value) <= PART_MAX and grammar.match(value)):
                raise ValueError(f"{name} {str(value)[:80]!r} is not of the form {grammar.pattern}")
        for name in ("opset", "api_level"):
            value = getattr(self, name)
            if not (isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 10_000):
                raise ValueError(f"{name} {str(value)[:80]!r} is not a small non-negative integer")
        if not _ID.match(self.id):  # the parts fit; so must the whole, as from_id reads it back
            raise ValueError(f"target id {self.id[:200]!r} does not parse back")

    @property
    def id(self) -> str:
        return scoped(self.model, self._id(self._release()))

    @property
    def cell_id(self) -> str:
        """The id without the model's name: the cell as the model's own matrix names it."""
        return self._id(self._release())

    def _release(self) -> str:
        """``ort1.24.1``; ``openvino2026.4.1`` for a kind that runs its own engine."""
        return f"{self.runner if self.runner in ENGINE_RUNNERS else 'ort'}{self.runtime}"

    @property
    def release_label(self) -> str:
        """The id's head, what its environment runs: ``ort1.24.1``, ``node-ort1.24.1``,
        ``android-api34-ort1.22.0``, ``tract0.23.9``."""
        return self._head(self._release())

    @property
    def family(self) -> str:
        """The id without its release (``node-cpu-op17-dynamo``, ``minilm.cpu-op17-dynamo-so-no_opt``):
        what stays the same from one release to the next, every other part of the cell (and its
        model) kept; a kind of its own engine keeps the engine's name (``tract-cpu-op17-dynamo``)."""
        return scoped(self.model, self._id(self.runner if self.runner in ENGINE_RUNNERS else ""))

    def _head(self, release: str) -> str:
        parts = (
            "" if self.runner in (DEFAULT_RUNNER, *ENGINE_RUNNERS) else self.runner,
            f"api{self.api_level}" if self.api_level else "",
            release,
        )
        return "-".join(p for p in parts if p)

    def _id(self, release: str) -> str:
        parts = (
            self._head(release),
            self.provider,
            f"op{self.opset}",
            self.exporter,
            "" if self.precision == "fp32" else self.precision,
            "" if self.session_options == DEFAULT_SESSION_OPTIONS else f"so-{self.session_options}",
        )
        return "-".join(p for p in parts if p)

    @property
    def bundle_key(self) -> str:
        """The bundle this target verifies: one export per (model, opset, exporter, precision)."""
        return self.export_key if self.precision == "fp32" else f"{self.export_key}-{self.precision}"

    @property
    def export_key(self) -> str:
        """The export job behind its bundle (export.parent.Job.key): a derived precision's bundle
        comes from its fp32 export."""
        return scoped(self.model, f"op{self.opset}-{self.exporter}")

    @classmethod
    def from_id(cls, target_id: str) -> Target:
        m = _ID.match(target_id)
        if (
            not m
            or m["runner"] in (DEFAULT_RUNNER, *ENGINE_RUNNERS)
            or m["session"] == DEFAULT_SESSION_OPTIONS
            or (m["engine"] and (m["runner"] or m["api_level"]))
        ):
            raise UsageError(
                f"target id {target_id!r} is not of the form [<model>.][<runner>-]ort<version>-<provider>"
                f" (or <engine><version>-<provider>, engine {' or '.join(ENGINE_RUNNERS)})"
                f"-op<opset>-<exporter>[{'|'.join('-' + p for p in DERIVED_PRECISIONS)}][-so-<preset>]; "
                "`onnx-gate plan` lists the ids"
            )
        try:
            return cls(
                runtime=m["runtime"],
                provider=m["provider"],
                opset=int(m["opset"]),
                exporter=m["exporter"],
                precision=m["precision"] or "fp32",
                runner=m["engine"] or m["runner"] or DEFAULT_RUNNER,
                session_options=m["session"] or DEFAULT_SESSION_OPTIONS,
                api_level=int(m["api_level"] or 0),
                model=m["model"] or "",
            )
        except ValueError as exc:
            raise UsageError(f"target id {target_id!r}: {exc}") from None


def scoped(model: str, name: str) -> str:
    """``name`` (a cell id, a bundle key, a family) of ``model``: ``minilm.op17-dynamo``; unchanged
    for the single ``model`` form's empty name. The one place a model's name joins a name."""
    return f"{model}.{name}" if model else name
