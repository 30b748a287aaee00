"""Load and validate onnx-gate.yml into a frozen Config.

The JSON Schema in ci_onnx/schemas/config.schema.json is the single place where keys and defaults
are declared; this module validates against it and fills defaults from it. A bad file gets one line:
``onnx-gate.yml:12: export.opset: unknown key; did you mean 'opsets'?``
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import functools
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ci_onnx.config import guard, hints
from ci_onnx.contracts import defaults
from ci_onnx.contracts.bundle import Decision, Preprocessing, TensorSpec, Tolerance
from ci_onnx.contracts.errors import ConfigError
from ci_onnx.contracts.gate_settings import ExpectedFailure, GateSettings, ServingRule
from ci_onnx.contracts.schema import load_schema
from ci_onnx.contracts.target import DERIVED_PRECISIONS
from ci_onnx.contracts.verify_options import Budgets

CONFIG_SCHEMA = "config.schema.json"
DEFAULT_NAME = "onnx-gate.yml"


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    name: str
    id: str = ""
    """The name that goes into target ids and bundle names: the model's name in a ``models``
    config, empty for the single ``model`` form (whose ids carry no name, as they always did)."""
    factory: str = ""
    onnx: str = ""
    test_data: str = ""
    inputs: tuple[TensorSpec, ...] = ()
    outputs: tuple[str, ...] = ()
    dynamic_axes: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict)
    samples: str = ""
    preprocessing: Preprocessing | None = None
    dim_sizes: dict[str, int] = dataclasses.field(default_factory=dict)
    """Sizes of symbolic dims other than the batch axis, for the example and random inputs."""
    dim_max: dict[str, int] = dataclasses.field(default_factory=dict)
    """model.dim_max: the largest size of a symbolic dim, the bound of its sweep."""
    depends_on: tuple[str, ...] = ()
    """model.depends_on: globs of files the export reads unseen (a subprocess's); in its key."""
    env: tuple[str, ...] = ()
    """model.env: variables the factory reads; the sha256 of each value is in its key."""


@dataclasses.dataclass(frozen=True)
class ExportConfig:
    opsets: tuple[int, ...]
    exporters: tuple[str, ...]
    precisions: tuple[str, ...]
    timeout_s: float
    calibration: str = ""
    """The calibration set of int8-static (default: model.samples)."""
    cache: bool = True
    """``onnx-gate run`` reuses bundles whose inputs did not change (ci_onnx/export/cache.py)."""


@dataclasses.dataclass(frozen=True)
class VerifyConfig:
    random_inputs: int
    seed: int
    tolerance: Tolerance
    tolerance_per_output: dict[str, Tolerance]
    decision: Decision | None
    batch_sizes: tuple[int, ...]
    timeout_s: float
    strict_fallback: bool
    latency_runs: int
    serving_figures: bool = True
    """verify.serving_figures: time a cold start and probe the optimized-model cache per target."""
    triage_timeout_s: float = 300.0
    """verify.triage_timeout_s: how long the triage of one failing cell may take; 0 turns it off."""
    triage_memory_mb: float = 1024.0
    """verify.triage_memory_mb: the memory a triage may hold for the values it compares."""
    triage_disk_mb: float = 1024.0
    """verify.triage_disk_mb: the temporary disk a triage may write for the target's values."""
    precision_tolerance: dict[str, tuple[Tolerance, dict[str, Tolerance]]] = dataclasses.field(
        default_factory=dict
    )
    """Per derived precision (fp16, int8-dynamic, int8-static): its default and per-output tolerances."""
    batch_sizes_declared: bool = False
    """Whether onnx-gate.yml writes verify.batch_sizes (a claim: a size the model cannot serve fails),
    rather than taking the schema's default (such a size is skipped, saying why)."""
    sweeps: dict[str, tuple[int, ...]] = dataclasses.field(default_factory=dict)
    """verify.sweeps: a dynamic dim → the sizes to check and time it at; a dim left out gets the
    default points (ci_onnx.export.sweep.timed_points)."""


@dataclasses.dataclass(frozen=True)
class TargetsConfig:
    runtimes: tuple[str, ...]
    providers: tuple[str, ...]
    include: tuple[dict[str, str], ...]
    exclude: tuple[dict[str, str], ...]
    nightly_index: str = ""
    runners: tuple[str, ...] = ("python",)
    """Runner kinds (keys of matrix/runners.toml), each a matrix axis of its own cells."""
    session_options: tuple[str, ...] = ("default",)
    """Session-options presets (matrix/session_options.toml or session_presets): an axis."""
    session_presets: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    engine_presets: dict[str, dict[str, dict[str, str]]] = dataclasses.field(default_factory=dict)
    """targets.engine_presets: kind → name → the engine's properties, beside the kind's own presets."""
    android_api_level: int = 34
    """targets.android.api_level: the Android API level the android runner's cells run at."""


@dataclasses.dataclass(frozen=True)
class CiConfig:
    """ci: how the generated workflows split the verify work over jobs (ci_onnx/plan/cijobs.py)."""

    max_job_minutes: float = float(defaults.of("ci.max_job_minutes"))
    max_cells_per_job: int = int(defaults.of("ci.max_cells_per_job"))
    """0: the estimate decides; else at most this many cells in one job, in place of the estimate."""
    export: str = str(defaults.of("ci.export"))
    """auto, plan or jobs: where the bundles are exported (ci_onnx/plan/cijobs.py export_layout)."""


@dataclasses.dataclass(frozen=True)
class Config:
    path: Path
    model: ModelConfig
    export: ExportConfig
    verify: VerifyConfig
    targets: TargetsConfig
    cpu_fallback_max_time_share: float
    accuracy_drop: float = 1.0
    """budgets.accuracy_drop: top-1 points a cell may lose against PyTorch on labelled samples."""
    budgets: Budgets = dataclasses.field(default_factory=Budgets)
    """Serving budgets (cold start, peak RSS, p99) a cell must stay within; none by default."""
    ci: CiConfig = dataclasses.field(default_factory=CiConfig)
    gate: GateSettings = dataclasses.field(default_factory=GateSettings)
    """``gate`` and ``expected_failures``: the mode, the ledger, the comparison's thresholds."""
    model_file: Path | None = None
    """The file that declares this model, where it is not ``path`` (a file ``include`` named)."""
    model_keys: tuple[str, ...] = ("model",)
    """Where the model's own keys are in that file: ``model``, or its block in ``models``."""

    @property
    def root(self) -> Path:
        """Relative paths in the model's keys are relative to the directory of the file that
        declares the model (``path``, or the included file)."""
        return (self.model_file or self.path).parent

    def resolve(self, relative: str) -> Path:
        return (self.root / relative).resolve()

    @property
    def onnx_only(self) -> bool:
        return bool(self.model.onnx)


@functools.cache
def schema() -> dict[str, Any]:
    return load_schema(CONFIG_SCHEMA)


MAX_TIMEOUT_S = 7 * 24 * 3600.0
"""export.timeout_s and verify.timeout_s: a job that needs more than a week is a mistake."""


def load(path: Path) -> Config:
    """Read, validate and type ``path``. Every problem is a ConfigError with file and line."""
    return parse(guard.read_text(path), path)


def key_location(cfg: Config, *keys: str) -> str:
    """``path:line: a.b`` for a key of ``cfg``'s file, for a problem found after it was read (a
    factory that is not there); the path alone where the file cannot be read again."""
    from ruamel.yaml import YAML

    path = cfg.model_file or cfg.path
    real = [*cfg.model_keys, *keys[1:]] if keys[:1] == ("model",) else list(keys)
    try:
        doc = YAML(typ="rt").load(io.StringIO(guard.read_text(path).removeprefix("\ufeff")))
    except Exception:  # changed or gone since it was read: the key without its line
        return f"{path}: {'.'.join(real)}"
    return f"{path}:{guard.line_of(doc, real)}: {'.'.join(real)}"


def parse(text: str, path: Path) -> Config:
    """The Config of the one model in ``text``; every problem, whatever its kind, is a ConfigError
    naming ``path``. A file of several models (``models``, ``include``): ci_onnx/config/cascade.py."""
    plain, doc = read(text, path)
    if "model" not in plain:
        raise ConfigError(
            f"{path}: holds several models (`models`/`include`), and this reads a file of one "
            "`model`; give the file of one model's block"
        )
    return build(plain, guard.Where((guard.Layer(path, doc, (), ("model",)),)), path)


def read(text: str, path: Path) -> tuple[dict[str, Any], Any]:
    """The file as plain values and as ruamel's document (for lines), validated against the schema."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    yaml = YAML(typ="rt")
    yaml.Constructor = _constructor()
    guard.check_flow_depth(text, path)
    try:
        doc = yaml.load(io.StringIO(text.removeprefix("\ufeff")))
    except MarkedYAMLError as exc:
        mark = exc.problem_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{path}{line}: not valid YAML: {guard.one_line(exc.problem)}") from None
    except (YAMLError, ValueError, TypeError, RecursionError, OverflowError, AttributeError) as exc:
        # ReaderError (control characters), complex keys, deep nesting: still one line
        raise ConfigError(
            f"{path}: not valid YAML: {guard.one_line(str(exc) or type(exc).__name__)}"
        ) from None
    if doc is None:
        raise ConfigError(f"{path}: the file is empty; `onnx-gate init` writes a commented example")
    plain = guard.Plainer(doc, path).value()
    with _unexpected(path):
        _validate(plain, doc, path)
    if not isinstance(plain, dict):
        raise ConfigError(f"{path}: not an onnx-gate config (a mapping of keys at the top level)")
    if "model" not in plain and "models" not in plain and "include" not in plain:
        raise ConfigError(
            f"{path}:1: (top level): 'model' is a required property (or `models` for several; "
            "`onnx-gate init` writes a commented example)"
        )
    if "model" in plain and ("models" in plain or "include" in plain):
        other = "models" if "models" in plain else "include"
        raise ConfigError(
            f"{path}:{guard.line_of(doc, [other])}: {other}: give either `model` (one model) or "
            "`models`/`include` (several), not both; move `model` into `models` with a name"
        )
    return plain, doc


@contextlib.contextmanager
def _unexpected(path: Path) -> Iterator[None]:
    """A problem of any other kind is still one ConfigError naming ``path``."""
    try:
        yield
    except (TypeError, ValueError, KeyError, AttributeError, OverflowError, RecursionError) as exc:
        raise ConfigError(
            f"{path}: cannot be read as an onnx-gate config "
            f"({type(exc).__name__}: {guard.one_line(str(exc))})"
        ) from None


def build(
    plain: dict[str, Any],
    where: guard.Where,
    path: Path,
    *,
    named: bool = False,
    model_file: Path | None = None,
    model_keys: tuple[str, ...] = ("model",),
) -> Config:
    """The Config of one model's effective values ``plain``; ``where`` names their keys in errors.
    ``named``: a model of ``models``, its name part of its ids; ``model_file`` and ``model_keys``:
    where its block is."""
    with _unexpected(path):
        config = _build(plain, where, path, named)
        return dataclasses.replace(config, model_file=model_file, model_keys=model_keys)


@functools.cache
def _constructor() -> Any:
    """ruamel's round-trip constructor, except that a date stays the text it was: an impossible
    one (``until: 2026-13-01``) then reaches validation, which names its key and line, instead of
    failing the YAML parse with neither."""
    from ruamel.yaml.constructor import RoundTripConstructor

    class Constructor(RoundTripConstructor):
        pass

    Constructor.add_constructor("tag:yaml.org,2002:timestamp", lambda c, node: c.construct_scalar(node))
    return Constructor


def _validate(plain: Any, doc: Any, path: Path) -> None:
    import jsonschema

    validator = _validator_class()(schema())
    errors = sorted(
        validator.iter_errors(plain), key=lambda e: (len(e.absolute_path), list(map(str, e.path)))
    )
    if not errors:
        return
    error = jsonschema.exceptions.best_match(errors) if len(errors) > 1 else errors[0]
    raise ConfigError(_describe(error, doc, path))


@functools.cache
def _validator_class() -> Any:
    """Draft 2020-12, except that an integer is an int: ``17.0`` is not an opset, ``1.0`` not a batch."""
    import jsonschema

    base = jsonschema.Draft202012Validator
    checker = base.TYPE_CHECKER.redefine(
        "integer", lambda _checker, v: isinstance(v, int) and not isinstance(v, bool)
    )
    return jsonschema.validators.extend(base, type_checker=checker)


def _describe(error: Any, doc: Any, path: Path) -> str:
    keys = [str(k) for k in error.absolute_path]
    where = ".".join(keys) or "(top level)"
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = list(error.schema.get("properties", {}))
        unknown = [k for k in error.instance if k not in allowed]
        if unknown and allowed:
            key = unknown[0]
            line = guard.line_of(doc, [*keys, key])
            suggestion = difflib.get_close_matches(key, allowed, n=1, cutoff=0.5)
            hint = (
                f"did you mean {suggestion[0]!r}?" if suggestion else f"expected one of: {', '.join(allowed)}"
            )
            return f"{path}:{line}: {'.'.join([*keys, key])}: unknown key; {hint}"
    line = guard.line_of(doc, keys)
    if error.validator == "oneOf" and (keys == ["model"] or (keys[:1] == ["models"] and len(keys) == 2)):
        return (
            f"{path}:{line}: {where}: give either `factory` with `inputs` and `outputs` (export from "
            "PyTorch) or `onnx` (a model exported elsewhere), not both and not neither"
        )
    if error.validator == "required":
        return f"{path}:{line}: {where}: {error.message}"
    if error.validator == "enum" and keys[-1:] == ["dtype"] and str(error.instance) in hints.TORCH_DTYPES:
        meant = hints.TORCH_DTYPES[str(error.instance)]
        return (
            f"{path}:{line}: {where}: {error.instance!r} is torch's name for {meant}; write `dtype: {meant}`"
        )
    if error.validator == "enum":
        suggestion = difflib.get_close_matches(
            str(error.instance), [str(v) for v in error.validator_value], n=1
        )
        hint = f"; did you mean {suggestion[0]!r}?" if suggestion else ""
        choices = ", ".join(str(v) for v in error.validator_value)
        return f"{path}:{line}: {where}: {error.instance!r} is not one of: {choices}{hint}"
    if error.validator == "type" and hints.wants_string(error) and isinstance(error.instance, (int, float)):
        written = hints.as_written(hints.node_at(doc, keys), error.instance)
        return (
            f"{path}:{line}: {where}: YAML reads {written} as the number {error.instance!r}; "
            f'quote it: "{written}"'
        )
    if error.validator == "pattern" and keys[-1:] == ["factory"] and keys[0] in ("model", "models"):
        return (
            f"{path}:{line}: {where}: {error.instance!r} names no callable; write the file and the "
            f"function that returns the model, e.g. `{str(error.instance).rstrip(':')}:build` "
            "(path/to/file.py:callable or package.module:callable)"
        )
    if error.validator == "pattern" and keys[:1] == ["models"] and keys[-1:] == ["name"]:
        return (
            f"{path}:{line}: {where}: {error.instance!r} cannot be a model's name (it is part of target "
            "ids, file and artifact names): a letter, then up to 39 letters, digits, - or _"
        )
    if error.validator == "pattern" and keys[-1:] == ["until"] and "expected_failures" in keys:
        return f"{path}:{line}: {where}: {error.instance!r} is not a date; write YYYY-MM-DD, the last day"
    if error.validator == "pattern" and keys[:2] == ["targets", "runtimes"]:
        return (
            f"{path}:{line}: {where}: {error.instance!r} is not a runtime spec; use an exact version "
            "(1.20.1), a wildcard (1.24.*), latest, latest-N or nightly"
        )
    return f"{path}:{line}: {where}: {error.message}"


def _defaults(*keys: str) -> dict[str, Any]:
    """The schema's defaults for the object at ``keys``."""
    node = schema()
    for key in keys:
        node = node["properties"][key]
    return {k: v["default"] for k, v in node.get("properties", {}).items() if "default" in v}


def _section(plain: dict[str, Any], *keys: str) -> dict[str, Any]:
    node: Any = plain
    for key in keys:
        node = node.get(key, {}) if isinstance(node, dict) else {}
    return {**_defaults(*keys), **node}


def _per_output(declared: dict[str, Any], base: Tolerance) -> dict[str, Tolerance]:
    return {
        out: Tolerance(atol=float(o.get("atol", base.atol)), rtol=float(o.get("rtol", base.rtol)))
        for out, o in declared.items()
    }


def _check_range(spec: TensorSpec, integer: bool, at: str) -> None:
    """``range`` is half-open, [low, high): it must hold a value (an integer one for integer inputs)."""
    assert spec.value_range is not None
    low, high = spec.value_range
    shown = f"[{low:g}, {high:g}]"
    if low >= high:
        raise ConfigError(
            f"{at}: {shown} is empty (values are drawn from [low, high)); "
            "give the lower bound first, e.g. [0, 100]"
        )
    if integer and int(low) >= int(high):
        raise ConfigError(f"{at}: {shown} holds no integer for a {spec.dtype} input; widen it, e.g. [0, 100]")


def _build(plain: dict[str, Any], where: guard.Where, path: Path, named: bool) -> Config:
    m = plain["model"]
    inputs = tuple(
        TensorSpec(
            name=name,
            shape=tuple(spec["shape"]),
            dtype=spec.get("dtype", "float32"),
            value_range=tuple(spec["range"]) if "range" in spec else None,
        )
        for name, spec in m.get("inputs", {}).items()
    )
    for spec in inputs:
        integer = spec.dtype.startswith(("int", "uint"))
        if integer and spec.value_range is None:
            raise ConfigError(
                f"{where(['model', 'inputs', spec.name])}: "
                f"integer input needs `range: [low, high)` for its random values, high excluded "
                "(token ids: [0, vocab_size))"
            )
        if spec.value_range is not None:
            _check_range(spec, integer, where(["model", "inputs", spec.name, "range"]))
    pre = m.get("preprocessing")
    name = m.get("name") or (m.get("factory", "").split(":")[-1] or Path(m.get("onnx", "model")).stem)
    model = ModelConfig(
        name=name,
        id=name if named else "",
        factory=m.get("factory", ""),
        onnx=m.get("onnx", ""),
        test_data=m.get("test_data", ""),
        inputs=inputs,
        outputs=tuple(m.get("outputs", ())),
        dynamic_axes={k: {str(a): n for a, n in v.items()} for k, v in m.get("dynamic_axes", {}).items()},
        samples=m.get("samples", ""),
        dim_sizes={str(k): int(v) for k, v in m.get("dim_sizes", {}).items()},
        dim_max={str(k): int(v) for k, v in m.get("dim_max", {}).items()},
        depends_on=tuple(m.get("depends_on", ())),
        env=tuple(m.get("env", ())),
        preprocessing=Preprocessing(
            mean=tuple(pre.get("mean", ())),
            std=tuple(pre.get("std", ())),
            channel_order=pre.get("channel_order", ""),
            extra={k: v for k, v in pre.items() if k not in ("mean", "std", "channel_order")},
        )
        if pre
        else None,
    )
    for section in ("export", "verify"):
        timeout = _section(plain, section)["timeout_s"]
        if isinstance(timeout, (int, float)) and timeout > MAX_TIMEOUT_S:
            raise ConfigError(
                f"{where([section, 'timeout_s'])}: {timeout} s is "
                f"more than a week ({MAX_TIMEOUT_S:.0f} s); give the seconds one job may take"
            )
    e = _section(plain, "export")
    declared = plain.get("export", {}) if isinstance(plain.get("export"), dict) else {}
    export = ExportConfig(
        # ONNX-only: the file's opset is verified; a declared list must hold it (ci_onnx.plan checks)
        opsets=tuple(declared.get("opsets", ())) if model.onnx else tuple(e["opsets"]),
        exporters=("onnx",) if model.onnx else tuple(e["exporters"]),
        precisions=tuple(e["precisions"]),
        timeout_s=float(e["timeout_s"]),
        calibration=e.get("calibration", ""),
        cache=bool(e["cache"]),
    )
    v = _section(plain, "verify")
    tol = {**_defaults("verify", "tolerance"), **v.get("tolerance", {})}
    default_tol = Tolerance(atol=float(tol["atol"]), rtol=float(tol["rtol"]))
    per_output = _per_output(tol.get("outputs", {}), default_tol)
    d = v.get("decision")
    declared_by_precision = v.get("precision_tolerance", {})
    by_precision = {}
    for precision in DERIVED_PRECISIONS:
        p = {
            **_defaults("verify", "precision_tolerance", precision),
            **declared_by_precision.get(precision, {}),
        }
        base = Tolerance(atol=float(p["atol"]), rtol=float(p["rtol"]))
        by_precision[precision] = (base, _per_output(p.get("outputs", {}), base))
    verify = VerifyConfig(
        random_inputs=int(v["random_inputs"]),
        seed=int(v["seed"]),
        tolerance=default_tol,
        tolerance_per_output=per_output,
        decision=Decision(output=d["output"], top_k=int(d.get("top_k", 1))) if d else None,
        batch_sizes=tuple(sorted(v["batch_sizes"])),
        timeout_s=float(v["timeout_s"]),
        strict_fallback=bool(v["strict_fallback"]),
        latency_runs=int(v["latency_runs"]),
        serving_figures=bool(v["serving_figures"]),
        triage_timeout_s=float(v["triage_timeout_s"]),
        triage_memory_mb=float(v["triage_memory_mb"]),
        triage_disk_mb=float(v["triage_disk_mb"]),
        precision_tolerance=by_precision,
        batch_sizes_declared="batch_sizes" in (plain.get("verify") or {}),
        sweeps={str(k): tuple(int(n) for n in sizes) for k, sizes in v["sweeps"].items()},
    )
    t = _section(plain, "targets")
    targets = TargetsConfig(
        runtimes=tuple(t["runtimes"]),
        providers=tuple(t["providers"]),
        include=tuple({k: str(x) for k, x in c.items()} for c in t["include"]),
        exclude=tuple({k: str(x) for k, x in c.items()} for c in t["exclude"]),
        nightly_index=t.get("nightly_index", ""),
        runners=tuple(t["runners"]),
        session_options=tuple(t["session_options"]),
        session_presets={k: dict(v) for k, v in t["session_presets"].items()},
        engine_presets={
            kind: {name: {k: _property(v) for k, v in row.items()} for name, row in named.items()}
            for kind, named in t["engine_presets"].items()
        },
        android_api_level=int(_section(plain, "targets", "android")["api_level"]),
    )
    _check_session_options(targets, where)
    _check_engine_presets(targets, where)
    if "nightly" in targets.runtimes and not targets.nightly_index:
        raise ConfigError(
            f"{where(['targets', 'runtimes'])}: 'nightly' needs "
            "targets.nightly_index, the extra index URL that serves onnxruntime's pre-release builds"
        )
    budget = _section(plain, "budgets", "cpu_fallback")
    config = Config(
        path=path,
        model=model,
        export=export,
        verify=verify,
        targets=targets,
        cpu_fallback_max_time_share=float(budget["max_time_share"]),
        accuracy_drop=float(_section(plain, "budgets")["accuracy_drop"]),
        budgets=Budgets.from_config(_section(plain, "budgets")),
        ci=CiConfig(
            max_job_minutes=float(_section(plain, "ci")["max_job_minutes"]),
            max_cells_per_job=int(_section(plain, "ci")["max_cells_per_job"]),
            export=str(_section(plain, "ci")["export"]),
        ),
        gate=_gate(plain, where, scope=model.id),
    )
    _check_references(config, where)
    return config


def _gate(plain: dict[str, Any], where: guard.Where, scope: str = "") -> GateSettings:
    """``gate`` and ``expected_failures``; an ``until`` that is not a calendar day is one line.

    ``scope``: a model of ``models``, whose own entries (``plain["expected_failures"]``) select among
    its targets only; the entries of the file's top (``plain["shared_failures"]``) are the
    gate's, globs over every id."""
    entries = ledger(plain.get("shared_failures", []), guard.Where(where.layers[:1]), "")
    entries += ledger(plain.get("expected_failures", []), where, scope)
    g = _section(plain, "gate")
    serving = {
        figure: ServingRule(
            float(rule["threshold"]),
            float(rule["p"]) if "p" in rule else None,
            float(rule["stored_threshold"]) if "stored_threshold" in rule else None,
        )
        for figure in _defaults("gate", "serving")
        for rule in [_section(plain, "gate", "serving", figure)]
    }
    return GateSettings(
        mode=g.get("mode", ""),
        expected_failures=tuple(entries),
        parity_drift=float(g["parity_drift"]),
        serving=serving,
        stored_figures=str(g["stored_figures"]),
        docs_url=str(g["docs_url"]),
        approval_label=str(g.get("approval_label", "")),
        fork_results=str(g["fork_results"]),
    )


def ledger(listed: list[dict[str, Any]], where: guard.Where, scope: str) -> list[ExpectedFailure]:
    """The entries of one ``expected_failures`` list; a model's own select among its ids only."""
    import datetime

    entries = []
    for i, e in enumerate(listed):
        try:
            datetime.date.fromisoformat(e["until"])
        except ValueError:
            raise ConfigError(
                f"{where(['expected_failures', str(i), 'until'])}: {e['until']!r} is not a calendar day; "
                "write YYYY-MM-DD, the last day the entry holds"
            ) from None
        key = ".".join(where.source(["expected_failures"])[1]) + f"[{i}]" if scope else ""
        entries.append(
            ExpectedFailure(
                f"{scope}.{e['select']}" if scope else e["select"],
                e["check"],
                e["reason"],
                e["until"],
                e.get("link", ""),
                i,
                key,
            )
        )
    return entries


def _check_session_options(targets: TargetsConfig, where: guard.Where) -> None:
    """Every preset of targets.session_options is declared, and every user preset is valid: one line."""
    from ci_onnx.runners import session

    for name, row in targets.session_presets.items():
        try:
            session.preset_from(name, row)
            session.presets({name: row})
        except session.PresetError as exc:
            raise ConfigError(f"{where(['targets', 'session_presets', name])}: {exc}") from None
    for name in targets.session_options:
        try:
            session.resolve(name, targets.session_presets)
        except session.PresetError as exc:
            raise ConfigError(f"{where(['targets', 'session_options'])}: {exc}") from None


def _property(value: Any) -> str:
    """An engine property's value as the engine reads it: text (YES/NO for a boolean)."""
    return ("YES" if value else "NO") if isinstance(value, bool) else str(value)


def _check_engine_presets(targets: TargetsConfig, where: guard.Where) -> None:
    """A user's engine preset names a kind with presets, and no preset of that kind's own."""
    from ci_onnx import matrix

    for kind, named in targets.engine_presets.items():
        own = matrix.runners()[kind].presets
        for name in named:
            if name in own:
                described = ", ".join(f"{k}={v}" for k, v in own[name].items()) or "the engine's defaults"
                raise ConfigError(
                    f"{where(['targets', 'engine_presets', kind, name])}: {name!r} is a preset of the {kind} "
                    f"runner already ({described}); give yours another name"
                )


def _check_references(config: Config, where: guard.Where) -> None:
    """Names that must refer to each other: decision and tolerance outputs, dynamic axes."""
    m = config.model
    if m.onnx:
        return
    known_outputs = set(m.outputs)
    known_tensors = known_outputs | {s.name for s in m.inputs}
    d = config.verify.decision
    if d and d.output not in known_outputs:
        raise ConfigError(_ref_error(where, ["verify", "decision", "output"], d.output, known_outputs))
    for out in config.verify.tolerance_per_output:
        if out not in known_outputs:
            raise ConfigError(_ref_error(where, ["verify", "tolerance", "outputs", out], out, known_outputs))
    for precision, (_, per_output) in config.verify.precision_tolerance.items():
        for out in per_output:
            if out not in known_outputs:
                keys = ["verify", "precision_tolerance", precision, "outputs", out]
                raise ConfigError(_ref_error(where, keys, out, known_outputs))
    _check_sweeps(config, where)
    for name, axes in m.dynamic_axes.items():
        if name not in known_tensors:
            raise ConfigError(_ref_error(where, ["model", "dynamic_axes", name], name, known_tensors))
        for spec in m.inputs:
            if spec.name == name:
                for axis in axes:
                    if int(axis) >= len(spec.shape):
                        raise ConfigError(
                            f"{where(['model', 'dynamic_axes', name])}: axis {axis} is out of range for "
                            f"input {name!r} of rank {len(spec.shape)}"
                        )


def _check_sweeps(config: Config, where: guard.Where) -> None:
    """verify.sweeps and model.dim_max name declared dynamic dims other than the batch axis; no size
    passes its dim_max."""
    m = config.model
    inputs = {s.name: s for s in m.inputs}
    batch = {n for k, axes in m.dynamic_axes.items() if k in inputs for a, n in axes.items() if a == "0"}
    dims = {n for k, axes in m.dynamic_axes.items() if k in inputs for n in axes.values()} - batch
    for keys, names in ((["verify", "sweeps"], config.verify.sweeps), (["model", "dim_max"], m.dim_max)):
        for name in names:
            if name not in dims:
                suggestion = difflib.get_close_matches(name, sorted(dims), n=1)
                hint = (
                    f"did you mean {suggestion[0]!r}?"
                    if suggestion
                    else f"dynamic dims other than the batch: {', '.join(sorted(dims)) or 'none'}"
                )
                what = "the batch axis (verify.batch_sizes sweeps it)" if name in batch else "no dynamic dim"
                raise ConfigError(
                    f"{where([*keys, name])}: {name!r} is {what} of an input (model.dynamic_axes); {hint}"
                )
    for name, sizes in config.verify.sweeps.items():
        over = [n for n in sizes if name in m.dim_max and n > m.dim_max[name]]
        if over:
            raise ConfigError(
                f"{where(['verify', 'sweeps', name])}: {over[0]} is past model.dim_max.{name} "
                f"({m.dim_max[name]}); drop it or raise the maximum"
            )


def _ref_error(where: guard.Where, keys: list[str], value: str, known: set[str]) -> str:
    suggestion = difflib.get_close_matches(value, sorted(known), n=1)
    hint = f"did you mean {suggestion[0]!r}?" if suggestion else f"known: {', '.join(sorted(known))}"
    if where.inherited(keys):  # the top of the file sets it for every model
        hint += " (set at the top, it applies to every model: set it in each model's block instead)"
    return f"{where(keys)}: {value!r} is not a declared input or output; {hint}"
