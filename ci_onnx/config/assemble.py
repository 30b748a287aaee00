"""Building the typed Config from one model's effective values (defaults from the config schema),
with the checks the schema cannot express (references between keys, ranges, presets)."""

from __future__ import annotations

import dataclasses
import difflib
from pathlib import Path
from typing import Any

from ci_onnx.config import guard
from ci_onnx.config.model import CiConfig, Config, ExportConfig, ModelConfig, TargetsConfig, VerifyConfig
from ci_onnx.config.validate import schema, unexpected
from ci_onnx.contracts.bundle import Decision, Preprocessing, TensorSpec, Tolerance
from ci_onnx.contracts.errors import ConfigError
from ci_onnx.contracts.gate_settings import ExpectedFailure, GateSettings, ServingRule
from ci_onnx.contracts.proc import MAX_TIMEOUT_S
from ci_onnx.contracts.target import DERIVED_PRECISIONS
from ci_onnx.contracts.verify_options import Budgets


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
    with unexpected(path):
        config = _build(plain, where, path, named)
        return dataclasses.replace(config, model_file=model_file, model_keys=model_keys)


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
