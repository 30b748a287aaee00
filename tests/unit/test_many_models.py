"""Several models in one gate: the cascade of settings, the errors, ids, the plan, what changed."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ci_onnx import config
from ci_onnx import plan as planning
from ci_onnx.cli import cli
from ci_onnx.config import cascade
from ci_onnx.contracts.errors import ConfigError
from ci_onnx.contracts.results import CheckResult, TargetResult, write_result
from ci_onnx.contracts.target import Status, Target
from ci_onnx.export import cache, parent, record
from ci_onnx.nightly.families import FamilyKey
from ci_onnx.orchestration import reuse
from ci_onnx.plan import cijobs
from ci_onnx.report import baseline
from ci_onnx.report.collect import collect
from tests.conftest import EXAMPLE_CONFIG, FakeIndex

INDEX = FakeIndex({"onnxruntime": ["1.32.0", "1.24.1", "1.20.1"], "onnxruntime-openvino": ["1.24.1"]})
FACTORY = "import torch\n\n\ndef build():\n    return torch.nn.Linear(4, 2)\n"
ROOT = """\
version: 1
export: {opsets: [17], exporters: [dynamo]}
verify:
  random_inputs: 4
  tolerance: {atol: 1.0e-4, rtol: 1.0e-3}
targets: {runtimes: ["1.32.0"], providers: [cpu]}
models:
  - name: encoder
    factory: encoder/model.py:build
    inputs: {x: {shape: [batch, 4]}}
    outputs: [y]
    verify: {tolerance: {atol: 1.0e-3}, decision: {output: y}}
    targets: {runtimes: ["1.20.1", "1.32.0"]}
include: ["*/onnx-gate.yml"]
"""
DECODER = """\
version: 1
model:
  factory: model.py:build
  inputs: {z: {shape: [batch, 4]}}
  outputs: [out]
export: {exporters: [torchscript]}
"""


def _repo(tmp_path: Path, root: str = ROOT, decoder: str = DECODER) -> Path:
    for name in ("encoder", "decoder"):
        (tmp_path / name).mkdir(exist_ok=True)
        (tmp_path / name / "model.py").write_text(FACTORY)
    (tmp_path / "decoder" / "onnx-gate.yml").write_text(decoder)
    path = tmp_path / "onnx-gate.yml"
    path.write_text(root)
    return path


def _error(path: Path) -> str:
    with pytest.raises(ConfigError) as info:
        cascade.load_all(path)
    return info.value.message


def test_each_model_gets_the_top_as_defaults_and_its_own_keys_over_them(tmp_path: Path) -> None:
    encoder, decoder = cascade.load_all(_repo(tmp_path))
    assert (encoder.model.id, decoder.model.id) == ("encoder", "decoder")  # the directory names decoder
    assert encoder.verify.tolerance.atol == 1e-3 and encoder.verify.tolerance.rtol == 1e-3  # key by key
    assert decoder.verify.tolerance.atol == 1e-4 and decoder.verify.decision is None
    assert encoder.targets.runtimes == ("1.20.1", "1.32.0") and decoder.targets.runtimes == ("1.32.0",)
    assert decoder.export.exporters == ("torchscript",) and decoder.export.opsets == (17,)
    assert (
        decoder.root == tmp_path / "decoder" and decoder.model_file == tmp_path / "decoder" / "onnx-gate.yml"
    )
    assert encoder.root == tmp_path and encoder.path == decoder.path == tmp_path / "onnx-gate.yml"


def test_a_mapping_keyed_by_name_is_the_same_as_the_list(tmp_path: Path) -> None:
    path = tmp_path / "onnx-gate.yml"
    (tmp_path / "a.onnx").write_bytes(b"")
    path.write_text("version: 1\nmodels:\n  first: {onnx: a.onnx}\n  second: {onnx: a.onnx}\n")
    assert [c.model.id for c in cascade.load_all(path)] == ["first", "second"]


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("  - name: encoder\n", "  - name: Decoder\n", r"decoder/onnx-gate\.yml:2: model: 'decoder' is already"),
        ("verify: {tolerance", "verfy: {tolerance", r"onnx-gate\.yml:12: models\.0\.verfy: unknown key; did you mean 'verify'"),
        ("targets: {runtimes: [\"1.20.1\"", "targets: {runtime: [\"1.20.1\"", r":13: models\.0\.targets\.runtime: unknown key"),
        ('include: ["*/onnx-gate.yml"]', 'include: ["models/*.yml"]', r"onnx-gate\.yml:14: include\.0: 'models/\*\.yml' matches no file"),
        ("  - name: encoder\n", "  - name: en.coder\n", r":8: models\.0\.name: 'en\.coder' cannot be a model's name"),
    ],
)  # fmt: skip
def test_a_bad_model_block_is_one_line_naming_file_line_and_key(
    tmp_path: Path, old: str, new: str, message: str
) -> None:
    import re

    assert old in ROOT
    assert re.search(message, _error(_repo(tmp_path, ROOT.replace(old, new)))), _error(
        _repo(tmp_path, ROOT.replace(old, new))
    )


def test_only_the_top_file_sets_the_gate_and_includes(tmp_path: Path) -> None:
    message = _error(_repo(tmp_path, decoder=DECODER + "gate: {mode: absolute}\n"))
    assert message.startswith(f"{tmp_path / 'decoder' / 'onnx-gate.yml'}:7: gate: set in onnx-gate.yml only")


def test_reading_a_file_of_several_models_as_one_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"holds several models \(`models`/`include`\)"):
        config.load(_repo(tmp_path))
    assert [c.model.id for c in cascade.load_all(_repo(tmp_path))] == ["encoder", "decoder"]


def test_model_and_models_together_is_an_error(tmp_path: Path) -> None:
    message = _error(_repo(tmp_path, ROOT + "model: {onnx: m.onnx}\n"))
    assert ":7: models: give either `model` (one model) or `models`/`include` (several)" in message


def test_a_setting_at_the_top_that_names_one_model_s_output_says_to_move_it(tmp_path: Path) -> None:
    root = ROOT.replace("  random_inputs: 4\n", "  random_inputs: 4\n  decision: {output: y}\n")
    message = _error(_repo(tmp_path, root.replace("decision: {output: y}}", "seed: 1}")))
    assert message.startswith(
        f"{tmp_path / 'onnx-gate.yml'}:5: verify.decision.output: 'y' is not a declared"
    )
    assert "set at the top, it applies to every model: set it in each model's block instead" in message


def test_an_onnx_only_model_is_not_given_the_top_s_export_opsets(tmp_path: Path) -> None:
    path = _repo(tmp_path, decoder="version: 1\nmodel: {onnx: m.onnx}\n")
    _, decoder = cascade.load_all(path)
    assert decoder.export.opsets == () and decoder.export.exporters == ("onnx",)


def test_explain_names_where_each_effective_value_came_from(tmp_path: Path) -> None:
    text = cascade.explain(_repo(tmp_path))
    encoder, decoder = text.split("\n\n")
    rows = {line.split()[0]: line.split()[-1] for line in encoder.splitlines()}
    assert rows["verify.tolerance.atol"] == f"{tmp_path / 'onnx-gate.yml'}:12"  # the block's
    assert rows["verify.tolerance.rtol"] == f"{tmp_path / 'onnx-gate.yml'}:5"  # the top's
    assert rows["verify.seed"] == "default"
    rows = {line.split()[0]: line.split()[-1] for line in decoder.splitlines()}
    assert rows["export.exporters"] == f"{tmp_path / 'decoder' / 'onnx-gate.yml'}:6"
    assert rows["export.opsets"] == f"{tmp_path / 'onnx-gate.yml'}:2"
    result = CliRunner().invoke(cli, ["plan", "--config", str(tmp_path / "onnx-gate.yml"), "--explain"])
    assert result.exit_code == 0 and result.output.strip() == text


def test_ids_and_bundle_keys_carry_the_model_and_read_back(tmp_path: Path) -> None:
    the_plan = planning.expand(cascade.load_all(_repo(tmp_path)), INDEX)
    ids = [t.id for t in the_plan.targets]
    assert ids == [
        "decoder.ort1.32.0-cpu-op17-torchscript",
        "encoder.ort1.20.1-cpu-op17-dynamo",
        "encoder.ort1.32.0-cpu-op17-dynamo",
    ]
    assert the_plan.bundle_keys() == ["decoder.op17-torchscript", "encoder.op17-dynamo"]
    assert all(Target.from_id(t.id) == dataclasses.replace(t, runtime_spec="") for t in the_plan.targets)
    assert [m.id for m in the_plan.models] == ["encoder", "decoder"]
    assert the_plan.options_for(the_plan.targets[0]) == the_plan.models[1].verify


def test_single_model_ids_bundles_and_cache_keys_stay_as_they_were() -> None:
    cfg = config.load(EXAMPLE_CONFIG)
    t = planning.expand(cfg, INDEX).targets[0]
    assert (cfg.model.id, t.model, t.id, t.bundle_key) == ("", "", "ort1.20.1-cpu-op17-dynamo", "op17-dynamo")
    key = cache.key_for(cfg, parent.Job(17, "dynamo"))
    assert "id" not in key.material["model"], "single-model export cache keys are as before ids had models"
    assert FamilyKey.of(t).id == "cpu-op17-dynamo@1.20.1"


def test_only_takes_globs_over_ids_and_model_slash_cell(tmp_path: Path) -> None:
    the_plan = planning.expand(cascade.load_all(_repo(tmp_path)), INDEX)
    for pattern in ("encoder/*", "encoder.*"):
        kept = planning.select(the_plan, [pattern])
        assert {t.model for t in kept.targets} == {"encoder"} and [m.id for m in kept.models] == ["encoder"]
    assert [t.id for t in planning.select(the_plan, ["*/ort1.20.*"]).targets] == [
        "encoder.ort1.20.1-cpu-op17-dynamo"
    ]


def test_export_only_selects_a_model_s_bundle_by_its_key(tmp_path: Path) -> None:
    cfgs = cascade.load_all(_repo(tmp_path))
    jobs = [j for c in cfgs for j in parent.candidates(c)]
    chosen = parent.select(jobs, ["encoder.op17-dynamo-fp16"], lambda _: [], ["fp32", "fp16"])
    assert chosen == [parent.Job(17, "dynamo", "encoder")]  # a derived precision's key selects its export


def test_the_ledger_of_a_model_selects_among_its_own_targets(tmp_path: Path) -> None:
    entry = "  - {select: '*', check: parity*, reason: known, until: '2999-01-01'}\n"
    root = ROOT.replace(
        "    targets: {runtimes",
        "    expected_failures:\n  " + entry.replace("  -", "    -", 1) + "    targets: {runtimes",
    )
    root += "expected_failures:\n" + entry.replace("'*'", "'*-op17-*'")
    the_plan = planning.expand(cascade.load_all(_repo(tmp_path, root)), INDEX)
    assert [(e.select, e.key) for e in the_plan.gate.expected_failures] == [
        ("*-op17-*", "expected_failures[0]"),
        ("encoder.*", "models.0.expected_failures[0]"),
    ]


def test_family_keys_and_environments_key_on_the_model_and_the_release(tmp_path: Path) -> None:
    from ci_onnx.runners.batch import environment_key

    a = Target("1.32.0", "cpu", 17, "dynamo", model="encoder")
    b = dataclasses.replace(a, model="decoder")
    assert FamilyKey.of(a).id == "encoder.cpu-op17-dynamo@1.32.0" != FamilyKey.of(b).id
    assert environment_key(a) == environment_key(b), "two models of one release share its environment"


def _fingerprints(tmp_path: Path) -> dict[str, str]:
    cfgs = cascade.load_all(tmp_path / "onnx-gate.yml")
    return {m.id: m.fingerprint for m in reuse.fingerprinted(planning.expand(cfgs, INDEX), cfgs).models}


def test_a_fingerprint_keys_the_config_a_source_is_the_record_s(tmp_path: Path) -> None:
    _repo(tmp_path)
    before = _fingerprints(tmp_path)
    assert all(before.values())
    (tmp_path / "decoder" / "model.py").write_text(FACTORY + "# changed\n")
    assert _fingerprints(tmp_path) == before, "what the export read is checked by its record"
    (tmp_path / "onnx-gate.yml").write_text(ROOT.replace("atol: 1.0e-3}", "atol: 1.0e-2}"))
    assert _fingerprints(tmp_path)["encoder"] != before["encoder"], "its config block is part of it"


def _export_read(result: TargetResult, root: Path) -> TargetResult:
    """``result`` as a base run wrote it: its export finding records the model's factory as read."""
    read = record.keyed([str(root / result.target.model / "model.py")], root)
    export = CheckResult("export", Status.PASSED, "exported", {record.FIGURE: read.to_json()})
    return dataclasses.replace(result, checks=(export, *result.checks))


def test_an_unchanged_model_takes_its_results_from_the_base(tmp_path: Path) -> None:
    from ci_onnx.verify import judge

    cfgs = cascade.load_all(_repo(tmp_path))
    (tmp_path / ".git").mkdir()  # the checkout: recorded paths are relative to it
    the_plan = reuse.fingerprinted(planning.expand(cfgs, INDEX), cfgs)
    base_dir = tmp_path / "base"
    for t in the_plan.targets:
        write_result(base_dir / "results", _export_read(judge.result(t, None, []), tmp_path))
    (base_dir / "plan.json").write_text(planning.to_json(the_plan))
    baseline.write_meta(base_dir, "4f1d2c3aa", {})
    (tmp_path / "decoder" / "model.py").write_text(FACTORY + "# changed\n")
    head = reuse.unchanged(
        reuse.fingerprinted(planning.expand(cfgs, INDEX), cfgs), baseline.load(base_dir), cfgs
    )
    assert [(m.id, m.unchanged_since) for m in head.models] == [("encoder", "4f1d2c3aa"), ("decoder", "")]
    assert head.models[1].reuse == "re-run: decoder/model.py changed"
    assert head.models[0].reuse.startswith("nothing its export read changed: 1 file(s) hash the same")
    assert [t.id for t in head.runnable] == ["decoder.ort1.32.0-cpu-op17-torchscript"]
    outputs = cijobs.github_outputs(head)
    assert json.loads(outputs["bundles"]) == ["decoder.op17-torchscript"] and outputs["targets"] == "1"
    empty = tmp_path / "head-results"
    empty.mkdir()
    without = collect([empty], head)
    assert {e.target.model: e.outcome for e in without.entries if e.target.model == "encoder"} == {
        "encoder": Status.MISSING
    }, "the plan says the base's results stand: without them the gate cannot pass"
    found = collect([empty], head, baseline.load(base_dir).results)
    assert {e.target.id: e.unchanged_since for e in found.entries if e.target.model == "encoder"} == {
        "encoder.ort1.20.1-cpu-op17-dynamo": "4f1d2c3aa",
        "encoder.ort1.32.0-cpu-op17-dynamo": "4f1d2c3aa",
    }
    from ci_onnx.report import gate, view

    base = baseline.load(base_dir)
    shown = view.build(found, gate.decide(found, head, base, mode=gate.Mode.REGRESSION, why="a pull request"))
    lines = {m.model: m.line for m in shown.models}
    assert (
        "unchanged since 4f1d2c3, not re-run (nothing its export read changed: 1 file(s)" in lines["encoder"]
    )
    assert lines["decoder"].endswith("(re-run: decoder/model.py changed)"), lines


def test_without_evidence_every_model_runs_and_says_why(tmp_path: Path) -> None:
    from ci_onnx.verify import judge

    cfgs = cascade.load_all(_repo(tmp_path))
    (tmp_path / ".git").mkdir()
    the_plan = reuse.fingerprinted(planning.expand(cfgs, INDEX), cfgs)
    crashed = next(t for t in the_plan.targets if t.model == "encoder")  # its export recorded nothing
    base_dir = tmp_path / "base"
    for t in the_plan.targets:
        result = judge.result(t, None, [])
        write_result(base_dir / "results", result if t == crashed else _export_read(result, tmp_path))
    encoder_only = dataclasses.replace(the_plan, models=the_plan.models[:1])
    (base_dir / "plan.json").write_text(planning.to_json(encoder_only))
    head = reuse.unchanged(the_plan, baseline.load(base_dir), cfgs)
    assert [(m.id, m.unchanged_since, m.reuse) for m in head.models] == [
        ("encoder", "", "re-run: the base results hold no record of what its export read"),
        ("decoder", "", "re-run: the base's plan does not hold it"),
    ]


def test_init_writes_the_models_form(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["init", str(tmp_path), "--models", "encoder,decoder"])
    assert result.exit_code == 0, result.output
    for name in ("encoder", "decoder"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "model.py").write_text(FACTORY.replace("4, 2", "3 * 224 * 224, 2"))
    cfgs = cascade.load_all(tmp_path / "onnx-gate.yml")
    assert [(c.model.id, c.verify.decision is not None) for c in cfgs] == [
        ("encoder", True),
        ("decoder", True),
    ]
    bad = CliRunner().invoke(cli, ["init", str(tmp_path / "x"), "--models", "a,a"])
    assert bad.exit_code == 2 and "names are unique" in bad.output


def test_the_example_of_two_models_includes_the_examples() -> None:
    cfgs = cascade.load_all(EXAMPLE_CONFIG.parents[1] / "onnx-gate.yml")
    assert [c.model.id for c in cfgs] == ["digitnet", "all-MiniLM-L6-v2"]
    assert cfgs[0].root == EXAMPLE_CONFIG.parent


def test_a_gate_with_nothing_to_run_misses_no_uploaded_results(tmp_path: Path) -> None:
    """Every model unchanged since the base: no verify job uploads, and that is no problem."""
    cfgs = cascade.load_all(_repo(tmp_path))
    the_plan = planning.expand(cfgs, INDEX)
    unchanged = tuple(dataclasses.replace(m, unchanged_since="4f1d2c3") for m in the_plan.models)
    none_to_run = dataclasses.replace(the_plan, models=unchanged)
    assert collect([tmp_path / "collected"], none_to_run).problems == ()
    assert collect([tmp_path / "collected"], the_plan).problems, "with targets to run, the missing upload is"


@pytest.mark.parametrize("by", ["--plan", "--config"])
def test_a_verify_job_holding_two_models_judges_each_by_its_own_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, by: str
) -> None:
    """One environment's verify job may hold targets of several models (cijobs groups by
    environment): each target is verified with its own model's settings, not the first target's."""
    from ci_onnx.verify import job

    path = _repo(tmp_path, decoder=DECODER + "verify: {latency_runs: 7}\n")
    the_plan = planning.expand(cascade.load_all(path), INDEX)
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(planning.to_json(the_plan))
    ids = ["encoder.ort1.32.0-cpu-op17-dynamo", "decoder.ort1.32.0-cpu-op17-torchscript"]
    assert {the_plan.get(i).model for i in ids} == {"encoder", "decoder"}
    runs: dict[str, int] = {}

    def verify_all(items: Any, out: Path, options: Any, **_: Any) -> dict[str, Exception]:
        runs.update({t.id: options.latency_runs for _, t in items})
        return {t.id: RuntimeError("not run here") for _, t in items}

    monkeypatch.setattr(job, "verify_all", verify_all)
    source = [by, str(plan_file if by == "--plan" else path)]
    result = CliRunner().invoke(
        cli,
        [
            "verify",
            "--bundles",
            str(tmp_path),
            "--target",
            ",".join(ids),
            *source,
            "--out",
            str(tmp_path / "o"),
        ],
    )
    assert result.exit_code == 1, result.output
    default = cascade.load_one(path, "encoder").verify.latency_runs
    assert default != 7 and runs == {ids[0]: default, ids[1]: 7}
