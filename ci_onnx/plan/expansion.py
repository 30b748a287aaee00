"""The expansion: runners × runtimes × providers × opsets × exporters × precisions × session-options
presets, plus ``include``, minus ``exclude``; a runner kind expands only the providers it offers
(runners.toml). A cell that cannot work is kept, as an expected skip with its reason."""

from __future__ import annotations

import dataclasses
import fnmatch
import itertools
from collections.abc import Iterable, Sequence
from typing import Any

from ci_onnx import matrix
from ci_onnx.config import Config
from ci_onnx.contracts.errors import ConfigError
from ci_onnx.contracts.target import DEFAULT_RUNNER, Target
from ci_onnx.host.resolve import (
    NoRelease,
    Resolver,
    absent,
    check_exact,
    display,
    is_exact,
    resolve,
    resolve_all,
)
from ci_onnx.plan.cijobs import CiSettings
from ci_onnx.plan.document import SCHEMA_VERSION, Plan, PlannedModel
from ci_onnx.runners import session


@dataclasses.dataclass(frozen=True)
class ModelFile:
    """What an ONNX-only model's file says about itself."""

    opset: int
    """The default-domain opset; 0 when the file imports only other domains (ai.onnx.ml …)."""
    ir_version: int


def model_file(config: Config) -> ModelFile | None:
    """An ONNX-only model's opset and IR version, read from the file (None for a torch model).

    The one place plan, export, run, nightly and the generated workflows learn them: an ONNX-only
    model is verified at the opset it was written at, never at ``export.opsets``.
    """
    if not config.onnx_only:
        return None
    from ci_onnx.export import onnx_only

    opset, ir_version = onnx_only.file_versions(config)
    declared = config.export.opsets
    if declared and opset not in declared:
        raise ConfigError(
            f"{config.path}: export.opsets: {list(declared)}, but {config.model.onnx} is at opset {opset}; "
            f"ONNX-only mode verifies the file at its own opset: drop export.opsets or set it to [{opset}]"
        )
    return ModelFile(opset, ir_version)


def opsets_of(config: Config) -> tuple[int, ...]:
    """The opsets the plan expands: an ONNX-only model's own, else ``export.opsets``."""
    m = model_file(config)
    return (m.opset,) if m is not None else tuple(config.export.opsets)


def onnx_opset(config: Config) -> int:
    """The opset an ONNX-only model was exported at (read from the file); 0 for a torch model."""
    return opsets_of(config)[0] if config.onnx_only else 0


def expand(
    configs: Config | Sequence[Config], resolver: Resolver, opsets: Sequence[int] | None = None
) -> Plan:
    """One plan for every model of ``configs`` (a Config, or each model's of a ``models`` file);
    ``opsets`` overrides :func:`opsets_of` (the demo matrix does)."""
    from ci_onnx.contracts.verify_options import options_from

    every = (configs,) if isinstance(configs, Config) else tuple(configs)
    first = every[0]
    targets = tuple(t for config in every for t in _cells(config, resolver, opsets))
    ledger = tuple(dict.fromkeys(e for c in every for e in c.gate.expected_failures))
    return Plan(
        SCHEMA_VERSION,
        str(first.path),
        first.model.name if len(every) == 1 else ", ".join(c.model.name for c in every),
        tuple(sorted(targets, key=sort_key)),
        options_from(first),
        _ci_settings(every, targets),
        dataclasses.replace(first.gate, expected_failures=ledger),
        tuple(PlannedModel(c.model.id, c.model.name, options_from(c)) for c in every),
    )


def _ci_settings(every: Sequence[Config], targets: Sequence[Target]) -> CiSettings:
    """The CI layout settings: the first model's ``ci`` section, and every model's bundle sizes."""
    from ci_onnx.plan import cijobs

    each = [
        cijobs.settings(c, (t for t in targets if t.model == c.model.id and not t.expected_skip))
        for c in every
    ]
    sizes = {key: mb for s in each for key, mb in s.bundle_mb.items()}
    return dataclasses.replace(each[0], bundle_mb=dict(sorted(sizes.items())))


def _cells(config: Config, resolver: Resolver, opsets: Sequence[int] | None) -> tuple[Target, ...]:
    """The targets of one model."""
    t = config.targets
    m = model_file(config) if opsets is None else None
    ir_version = m.ir_version if m is not None else None
    cells: dict[str, Target] = {}
    unmatched: dict[str, list[NoRelease]] = {}
    missing: list[NoRelease] = []
    for runner, spec, provider in _runner_cells(config):
        info = matrix.runners()[runner]
        package = info.index_name(provider)
        try:
            versions = [(v, "") for v in resolve_all(spec, package, resolver)]
        except NoRelease as exc:
            unmatched.setdefault(spec, []).append(exc)
            versions = [(spec.removesuffix(".*"), f"{display(package)} has no release matching {spec}")]
        if is_exact(spec) and info.missing_release == "skip":
            # A registry that skips releases the runtime list names for other kinds (Maven's
            # onnxruntime-android lacks patch releases PyPI has): an expected skip, never a 404 later.
            versions = [(v, skip or absent(v, package, resolver)) for v, skip in versions]
        for (version, skip), opset, exporter, precision, preset in itertools.product(
            versions,
            opsets if opsets is not None else opsets_of(config),
            config.export.exporters,
            config.export.precisions,
            tuple(info.presets_with(t.engine_presets)) or t.session_options,  # an engine's own, else ort's
        ):
            target = Target(
                runtime=version,
                provider=provider,
                opset=opset,
                exporter=exporter,
                precision=precision,
                runtime_spec="" if spec == version else spec,
                expected_skip=skip or ("" if info.presets else session.cannot_apply(runner, preset)),
                runner=runner,
                session_options=preset,
                api_level=t.android_api_level if "api_level" in info.can.id_axes else 0,
                model=config.model.id,
            )
            if not _excluded(target, t.exclude):
                target = with_skip_reason(target, ir_version)
                if is_exact(spec) and not target.expected_skip:
                    try:
                        check_exact(spec, package, resolver, f"{config.path}: targets.runtimes")
                    except NoRelease as exc:
                        missing.append(exc)
                cells.setdefault(target.id, target)
    for spec, errors in unmatched.items():
        asked = sum(1 for _, s, _ in _runner_cells(config) if s == spec)
        if len(errors) == asked:  # the spec matches nothing at all: a mistake, not a cell
            raise errors[0]
    if missing:  # after the spec that matches nothing: that one is the bigger mistake
        raise missing[0]
    for i, cell in enumerate(t.include):
        target = _included(cell, i, config, resolver)
        cells.setdefault(target.id, target)
    return tuple(with_skip_reason(c, ir_version) for c in cells.values())


def _runner_cells(config: Config) -> list[tuple[str, str, str]]:
    """(runner, runtime spec, provider) for each runner kind and the providers it offers."""
    t = config.targets
    cells = []
    for runner in t.runners:
        info = matrix.runners().get(runner)
        if info is None:
            raise ConfigError(
                f"{config.path}: targets.runners: unknown runner {runner!r}; "
                f"known: {', '.join(matrix.runners())}"
            )
        offered = [p for p in t.providers if p in info.providers]
        if not offered:
            raise ConfigError(
                f"{config.path}: targets.runners: the {runner} runner offers "
                f"{', '.join(info.providers)}, none of targets.providers; add one of them, or drop the runner"
            )
        specs = info.releases or t.runtimes  # an engine of its own: its releases, not onnxruntime's
        cells += [(runner, spec, p) for spec, p in itertools.product(specs, offered)]
    return cells


def sort_key(t: Target) -> tuple[Any, ...]:
    return (
        t.model,
        t.runner != DEFAULT_RUNNER,
        t.runner,
        matrix.version_key(t.runtime),
        t.provider,
        t.opset,
        t.exporter,
        t.precision,
        t.session_options != "default",
        t.session_options,
    )


def _included(cell: dict[str, str], index: int, config: Config, resolver: Resolver) -> Target:
    missing = [k for k in ("runtime", "provider", "opset", "exporter") if k not in cell]
    if missing:
        raise ConfigError(
            f"{config.path}: targets.include[{index}]: a cell to include needs {', '.join(missing)} too"
        )
    provider = cell["provider"]
    if provider not in matrix.providers():
        raise ConfigError(
            f"{config.path}: targets.include[{index}].provider: unknown provider {provider!r}; "
            f"known: {', '.join(matrix.providers())}"
        )
    runner = cell.get("runner", DEFAULT_RUNNER)
    info = matrix.runners().get(runner)
    if info is None or provider not in info.providers:
        known = ", ".join(matrix.runners()) if info is None else f"it offers {', '.join(info.providers)}"
        raise ConfigError(
            f"{config.path}: targets.include[{index}].runner: {runner!r} cannot run {provider}; {known}"
        )
    package = info.index_name(provider)
    version = resolve(cell["runtime"], package, resolver)
    if is_exact(cell["runtime"]):
        check_exact(version, package, resolver, f"{config.path}: targets.include[{index}].runtime")
    preset = cell.get("session_options", "default")
    own = info.presets_with(config.targets.engine_presets)
    if own and preset not in own:
        raise ConfigError(
            f"{config.path}: targets.include[{index}].session_options: the {runner} runner's presets "
            f"are {', '.join(own)} (runners.toml and targets.engine_presets), not {preset!r}"
        )
    try:
        if not info.presets:
            session.resolve(preset, config.targets.session_presets)
    except session.PresetError as exc:
        raise ConfigError(f"{config.path}: targets.include[{index}].session_options: {exc}") from None
    try:
        return Target(
            runtime=version,
            provider=provider,
            opset=int(cell["opset"]),
            exporter=cell["exporter"],
            precision=cell.get("precision", "fp32"),
            runtime_spec="" if version == cell["runtime"] else cell["runtime"],
            expected_skip="" if info.presets else session.cannot_apply(runner, preset),
            runner=runner,
            session_options=preset,
            api_level=config.targets.android_api_level if "api_level" in info.can.id_axes else 0,
            model=config.model.id,
        )
    except ValueError as exc:
        raise ConfigError(f"{config.path}: targets.include[{index}]: {exc}") from None


def _excluded(target: Target, rules: Iterable[dict[str, str]]) -> bool:
    fields = {
        "runtime": (target.runtime, target.runtime_spec),
        "provider": (target.provider,),
        "opset": (str(target.opset),),
        "exporter": (target.exporter,),
        "precision": (target.precision,),
        "runner": (target.runner,),
        "session_options": (target.session_options,),
    }
    return any(
        all(any(v and fnmatch.fnmatchcase(v, pattern) for v in fields[key]) for key, pattern in rule.items())
        for rule in rules
    )


def with_skip_reason(target: Target, ir_version: int | None = None) -> Target:
    caps = matrix.runners()[target.runner].caps_for(target.runtime)
    if target.expected_skip or caps is None:  # None: another engine's release, not in the table
        return target
    reason = caps.cannot_load(target.opset, ir_version)
    info = matrix.providers()[target.provider]
    if (
        not reason
        and matrix.runners()[target.runner].can.interpreter  # it installs the provider's PyPI package
        and info.min_runtime
        and matrix.version_key(target.runtime) < matrix.version_key(info.min_runtime)
    ):
        reason = f"{info.package} has no release {target.runtime}; the oldest is {info.min_runtime}"
    return dataclasses.replace(target, expected_skip=reason) if reason else target
