"""Session-options presets as matrix data: parsing, ids that parse back, the plan axis, bad presets."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from ci_onnx import config
from ci_onnx import plan as planning
from ci_onnx.contracts.errors import ConfigError, UsageError
from ci_onnx.contracts.target import Target
from ci_onnx.observer import optcache, session
from ci_onnx.runners import session as presets
from tests.conftest import DIGITNET_MODEL, FakeIndex

INDEX = FakeIndex({"onnxruntime": ["1.32.0", "1.20.1"], "onnxruntime-node": []})


def cfg_of(tmp_path: Path, targets: str) -> config.Config:
    path = tmp_path / "onnx-gate.yml"
    path.write_text(f"version: 1\n{DIGITNET_MODEL}export: {{opsets: [17], exporters: [dynamo]}}\n{targets}")
    return config.load(path)


def test_the_table_declares_the_runtime_default_and_the_four_settings() -> None:
    table = presets.builtin()
    assert table["default"].settings() == {}  # the runtime's own defaults: nothing set
    assert table["no_opt"].settings() == {"graph_optimization_level": "disable"}
    declared = {k for p in table.values() for k in p.settings()}
    assert declared == set(session.KEYS)


def test_default_ids_are_unchanged_and_a_preset_id_parses_back() -> None:
    plain = Target("1.20.1", "cpu", 17, "dynamo", "int8-static")
    assert plain.id == "ort1.20.1-cpu-op17-dynamo-int8-static"
    for t in (
        dataclasses.replace(plain, session_options="no_opt"),
        Target("1.24.1", "cpu", 18, "torchscript", session_options="sequential_1", runner="node"),
        Target("1.32.0", "openvino", 21, "dynamo", "fp16", session_options="my_threads2"),
    ):
        assert "-so-" in t.id and Target.from_id(t.id) == t, t.id
    assert Target.from_id(plain.id) == plain
    with pytest.raises(UsageError, match="-so-<preset>"):
        Target.from_id("ort1.20.1-cpu-op17-dynamo-so-default")  # the default is never written


def test_the_axis_multiplies_the_plan_and_shows_each_preset(tmp_path: Path) -> None:
    cfg = cfg_of(
        tmp_path,
        "targets:\n  runtimes: ['1.32.0']\n  session_options: [default, no_opt, mine]\n"
        "  session_presets: {mine: {intra_op_threads: 2, mem_pattern: false}}\n",
    )
    plan = planning.expand(cfg, INDEX)
    assert [t.id for t in plan.targets] == [
        "ort1.32.0-cpu-op17-dynamo",
        "ort1.32.0-cpu-op17-dynamo-so-mine",
        "ort1.32.0-cpu-op17-dynamo-so-no_opt",
    ]
    assert plan.bundle_keys() == ["op17-dynamo"]  # presets share the bundle
    table = planning.render_table(plan)
    assert "mine (intra_op_threads=2, mem_pattern=False)" in table
    assert "no_opt (graph_optimization_level=disable)" in table
    # the runner gets the resolved preset from the plan, not from a config file
    args = presets.runner_args("mine", plan.verify.session_presets, Path("/env"))
    assert session.parse_arg(args[args.index("--session-options") + 1]) == {
        "intra_op_threads": 2,
        "mem_pattern": False,
    }
    assert "--session-options" not in presets.runner_args("default", {}, Path("/env"))


def test_a_runner_that_cannot_apply_a_preset_plans_it_as_an_expected_skip(tmp_path: Path) -> None:
    cfg = cfg_of(tmp_path, "targets:\n  runtimes: ['1.32.0']\n  runners: [python, node]\n"
                 "  session_options: [default, no_opt]\n")  # fmt: skip
    index = FakeIndex({"onnxruntime": ["1.32.0"], "npm:onnxruntime-node": ["1.32.0"]})
    skips = {t.id: t.expected_skip for t in planning.expand(cfg, index).targets}
    assert skips["ort1.32.0-cpu-op17-dynamo-so-no_opt"] == ""
    assert skips["node-ort1.32.0-cpu-op17-dynamo"] == ""
    assert (
        "node runner does not apply session-options presets"
        in skips["node-ort1.32.0-cpu-op17-dynamo-so-no_opt"]
    )


@pytest.mark.parametrize(
    ("targets", "key", "word"),
    [
        ("  session_options: [default, turbo]\n", "targets.session_options", "turbo"),
        ("  session_presets: {no_opt: {mem_pattern: false}}\n", "targets.session_presets.no_opt", "built-in"),
        ("  session_presets: {x: {threads: 2}}\n", "targets.session_presets.x", "threads"),
        ("  session_presets: {x: {graph_optimization_level: max}}\n", "targets.session_presets.x", "max"),
        ("  include: [{runtime: '1.32.0', provider: cpu, opset: 17, exporter: dynamo, "
         "session_options: nope}]\n", "targets.include[0].session_options", "nope"),
    ],
)  # fmt: skip
def test_a_bad_or_unknown_preset_is_one_line_naming_the_key(
    tmp_path: Path, targets: str, key: str, word: str
) -> None:
    with pytest.raises(ConfigError) as err:
        planning.expand(cfg_of(tmp_path, "targets:\n  runtimes: ['1.32.0']\n" + targets), INDEX)
    message = str(err.value)
    assert "\n" not in message and key in message and word in message, message


def test_presets_build_session_options() -> None:
    ort = pytest.importorskip("onnxruntime")
    so = session.apply(ort, ort.SessionOptions(), presets.builtin()["sequential_1"].settings())
    assert (so.intra_op_num_threads, so.inter_op_num_threads) == (1, 1)
    assert so.execution_mode == ort.ExecutionMode.ORT_SEQUENTIAL
    so = session.apply(
        ort, ort.SessionOptions(), {"graph_optimization_level": "disable", "mem_pattern": False}
    )
    assert (
        so.graph_optimization_level == ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        and not so.enable_mem_pattern
    )
    default = ort.SessionOptions()
    applied = session.apply(ort, ort.SessionOptions(), {})
    assert applied.graph_optimization_level == default.graph_optimization_level


def test_the_cache_key_changes_with_each_thing_the_optimized_graph_depends_on() -> None:
    base = ("1.32.0", ["CPUExecutionProvider"], {}, "ab" * 32)
    k = optcache.key(*base)
    assert k == optcache.key(*base) and len(k) == 32
    assert optcache.key("1.24.4", *base[1:]) != k
    assert optcache.key(base[0], ["OpenVINOExecutionProvider", "CPUExecutionProvider"], *base[2:]) != k
    assert optcache.key(base[0], base[1], {"graph_optimization_level": "basic"}, base[3]) != k
    assert optcache.key(*base[:3], "cd" * 32) != k
    # the preset's name is not part of it: two names for the same settings share an entry
    assert optcache.key(base[0], base[1], {"name": "mine"}, base[3]) == k
