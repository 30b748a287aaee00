"""What a runner kind can do is declared on its row in matrix/runners.toml (``[runners.<kind>.can]``),
and every layer that asks reads the declaration: plan (session-options presets), the judge (the
optimized-model cache, the install hint), verify (``--python``, the API level), the shared collect
(cold start) and the action (the runtime it installs). None names a kind."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from ci_onnx import _data, matrix
from ci_onnx.contracts import serde
from ci_onnx.contracts.errors import UsageError
from ci_onnx.contracts.results import SCHEMA_VERSION, Environment, Observation
from ci_onnx.runners import base, session
from ci_onnx.verify import cache_check, stage


def _declaring(monkeypatch: pytest.MonkeyPatch, kind: str, **can: object) -> None:
    """runners.toml as read, with ``kind``'s ``can`` block changed."""
    rows = dict(matrix.runners())
    rows[kind] = dataclasses.replace(rows[kind], can=dataclasses.replace(rows[kind].can, **can))  # type: ignore[arg-type]
    monkeypatch.setattr(matrix, "runners", lambda: rows)


def test_every_kind_declares_every_capability_on_its_row() -> None:
    text = (_data.matrix_dir() / "runners.toml").read_text()
    fields = [f.name for f in dataclasses.fields(matrix.Capabilities)]
    for kind, info in matrix.runners().items():
        block = text.split(f"[runners.{kind}.can]\n", 1)[1].split("\n\n", 1)[0]
        assert [line.split(" = ")[0] for line in block.splitlines()] == fields, kind
        # an engine of its own (releases) is on PyPI too, but is not onnxruntime's interpreter
        assert info.can.interpreter == (info.registry == "pypi" and not info.releases)
    assert matrix.runners()["python"].can == matrix.Capabilities(True, True, True, True, True, True, ())
    assert matrix.runners()["android"].can.id_axes == ("api_level",)


def test_a_kind_that_declares_presets_or_a_cache_is_planned_and_judged_as_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The kind's name decides nothing: the same node cell, before and after its row declares more."""
    assert "the node runner does not apply session-options presets" in session.cannot_apply("node", "no_opt")
    obs = Observation(SCHEMA_VERSION, "node-ort1.24.1-cpu-op17-dynamo", None)
    evidence = _no_evidence()
    (skipped,) = cache_check.checks(None, obs, evidence, "node")  # type: ignore[arg-type]
    assert "the node runner has no optimized-model cache" in skipped.message
    _declaring(monkeypatch, "node", session_options=True, optimized_cache=True)
    assert session.cannot_apply("node", "no_opt") == ""
    assert cache_check.checks(None, obs, evidence, "node") == []  # type: ignore[arg-type]


def _no_evidence() -> object:
    from ci_onnx.verify.evidence import Evidence

    return Evidence({}, {}, {}, {})


def test_collect_says_why_a_kind_that_does_not_time_a_fresh_process_has_no_cold_start(tmp_path: Path) -> None:
    env = Environment("1.24.1", ("CPUExecutionProvider",), ("CPUExecutionProvider",), "Linux", "x")
    for kind in matrix.runners():
        out = tmp_path / kind
        out.mkdir()
        (out / base.OBSERVATION).write_text(serde.dumps(Observation(SCHEMA_VERSION, "t", env)))
        obs = base.collect(kind, out)
        if matrix.runners()[kind].can.cold_start:
            assert "cold_start" not in obs.unmeasured, kind
        else:
            assert obs.unmeasured["cold_start"] == f"the {kind} runner does not time a fresh process yet"
            assert base.read_observation(out) == obs  # written back for the judge


def test_an_api_level_is_an_id_axis_only_of_the_kinds_that_declare_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    target, _ = stage.settings("android-api34-ort1.22.0-cpu-op17-dynamo", None, None)
    assert target.api_level == 34
    with pytest.raises(UsageError, match="the node runner has no API level"):
        stage.settings("node-api34-ort1.24.1-cpu-op17-dynamo", None, None)
    with pytest.raises(UsageError, match="unknown runner 'rust'"):
        stage.settings("rust-ort1.24.1-cpu-op17-dynamo", None, None)
    _declaring(monkeypatch, "node", id_axes=("api_level",))
    assert stage.settings("node-api34-ort1.24.1-cpu-op17-dynamo", None, None)[0].api_level == 34


def test_the_folded_graph_rule_is_every_kinds(tmp_path: Path) -> None:
    """A profile without node events after runs that succeeded: the graph folded away entirely (the
    Python observer's rule, now the native kind's too); with runs that failed: a placement error."""
    env = Environment("1.29.0", ("CPUExecutionProvider",), ("CPUExecutionProvider",), "Linux", "x")
    sources = base.PlacementSources(profile="p.json", verbose_log="v.log")
    ran = Observation(SCHEMA_VERSION, "t", env, outputs={"test_data_set_0": {"y": "o.pb"}})
    failed = dataclasses.replace(ran, outputs={}, run_errors={"test_data_set_0": "boom"})
    for name, obs in (("ran", ran), ("failed", failed)):
        (tmp_path / name).mkdir()
        (tmp_path / name / base.OBSERVATION).write_text(serde.dumps(obs))
        (tmp_path / name / "p.json").write_text("[]")
    folded = base.collect("native", tmp_path / "ran", sources)
    assert folded.placement is not None and folded.placement.nodes_by_provider == {}
    broken = base.collect("native", tmp_path / "failed", sources)
    assert broken.placement is None and broken.placement_error == sources.none_found


def test_the_config_schema_offers_the_kinds_of_the_runner_table() -> None:
    """The schema names the kinds for editors to complete; the runner table is what plans them."""
    from ci_onnx import config

    runners = config.schema()["properties"]["targets"]["properties"]["runners"]
    assert runners["items"]["enum"] == list(matrix.runners())


def test_a_new_kind_is_one_module_one_observer_and_one_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tests/support/echo_kind.py and a row for it: planned ids, families, verify, judge and the
    declared capabilities all follow, and nothing else names the kind."""
    from ci_onnx.contracts import proc
    from ci_onnx.contracts.target import Status, Target
    from ci_onnx.contracts.verify_options import VerifyOptions
    from ci_onnx.nightly.families import FamilyKey
    from tests import bundles

    rows = dict(matrix.runners())
    rows["echo"] = matrix.RunnerInfo("echo", "tests.support.echo_kind", "npm", "echo", ("cpu",), "echo")
    monkeypatch.setattr(matrix, "runners", lambda: rows)
    t = Target("1.24.1", "cpu", 17, "onnx", runner="echo", runtime_spec="latest")
    assert t.id == "echo-ort1.24.1-cpu-op17-onnx" and Target.from_id(t.id).runner == "echo"
    assert FamilyKey.of(t).id == "echo-cpu-op17-onnx@latest"
    assert "the echo runner does not apply session-options presets" in session.cannot_apply("echo", "no_opt")
    how = base.Provisioning(tmp_path / "cache", proc.child_environment(os.environ))
    bundle = bundles.mlp_bundle(tmp_path / "mlp")
    r = stage.verify_target(bundle, t, tmp_path / "out", VerifyOptions(timeout_s=120), how).result
    assert r.status == Status.PASSED, r.summary
    checks = {c.name: c for c in r.checks}
    assert checks["parity[logits]"].status == checks["decision"].status == Status.PASSED
    assert checks["optimized-cache"].message == "not measured: the echo runner has no optimized-model cache"
    assert checks["cold-start"].message == "not measured: the echo runner does not time a fresh process yet"


def test_the_config_schemas_provider_and_runner_enums_are_the_matrix_tables() -> None:
    """A provider or runner kind is one row of matrix/: the config schema's enums (what editors
    complete and what validation accepts) must list exactly the table's keys, so a new row is not
    refused by the schema, nor the schema left offering a removed one."""
    from ci_onnx import matrix
    from ci_onnx.config import schema

    targets = schema()["properties"]["targets"]["properties"]
    assert targets["providers"]["items"]["enum"] == list(matrix.providers()), "providers.toml"
    assert targets["runners"]["items"]["enum"] == list(matrix.runners()), "runners.toml"
