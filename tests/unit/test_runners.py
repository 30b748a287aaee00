"""The runner seam without a runtime: the registry, ids that parse back, the runner axis of the plan,
and the judge skipping what a runner declared it could not measure."""

from __future__ import annotations

import dataclasses
import importlib
from pathlib import Path

import pytest

from ci_onnx import config, matrix
from ci_onnx import plan as planning
from ci_onnx.contracts import bundle
from ci_onnx.contracts.errors import ConfigError, UsageError
from ci_onnx.contracts.results import SCHEMA_VERSION, Environment, Observation
from ci_onnx.contracts.target import Status, Target
from ci_onnx.contracts.verify_options import VerifyOptions
from ci_onnx.plan import cijobs
from ci_onnx.runners import base
from ci_onnx.verify import evidence, judge
from tests import bundles
from tests.conftest import EXAMPLE_CONFIG, FakeIndex

BASE = config.load(EXAMPLE_CONFIG)
INDEX = FakeIndex(
    {
        "onnxruntime": ["1.32.0", "1.24.4", "1.20.1"],
        "onnxruntime-openvino": ["1.24.1"],
        "npm:onnxruntime-node": ["1.24.1", "1.20.1"],
    }
)


def cfg(**targets: object) -> config.Config:
    t = dataclasses.replace(
        BASE.targets, runtimes=("1.20.1",), providers=("cpu",), include=(), exclude=(), runners=("python",)
    )
    return dataclasses.replace(
        BASE,
        export=dataclasses.replace(BASE.export, opsets=(17,), exporters=("dynamo",)),
        targets=dataclasses.replace(t, **targets),
    )


def test_every_declared_kind_is_a_module_with_a_runner_of_that_kind() -> None:
    for name, info in matrix.runners().items():
        module = importlib.import_module(info.module)
        assert module.RUNNER.kind == name
        assert base.get(name) is module.RUNNER
        assert set(info.providers) <= set(matrix.providers()), name
    with pytest.raises(UsageError, match="unknown runner 'java'"):
        base.get("java")


@pytest.mark.parametrize(
    ("target", "text"),
    [
        (Target("1.20.1", "cpu", 17, "dynamo"), "ort1.20.1-cpu-op17-dynamo"),
        (Target("1.24.1", "cpu", 17, "dynamo", runner="node"), "node-ort1.24.1-cpu-op17-dynamo"),
        (
            Target("1.24.1", "cpu", 18, "torchscript", "fp16", runner="node"),
            "node-ort1.24.1-cpu-op18-torchscript-fp16",
        ),
    ],
)
def test_ids_are_readable_and_parse_back(target: Target, text: str) -> None:
    assert target.id == text
    assert Target.from_id(text) == target


def test_the_python_kind_has_no_prefix_to_parse() -> None:
    with pytest.raises(UsageError, match="not of the form"):
        Target.from_id("python-ort1.20.1-cpu-op17-dynamo")


def test_runners_default_to_python_and_expand_only_the_providers_they_offer() -> None:
    assert BASE.targets.runners == ("python",)
    plan = planning.expand(
        cfg(runners=("python", "node"), providers=("cpu", "openvino"), runtimes=("1.24.*",)), INDEX
    )
    assert [t.id for t in plan.targets] == [
        "ort1.24.1-openvino-op17-dynamo",
        "ort1.24.4-cpu-op17-dynamo",
        "node-ort1.24.1-cpu-op17-dynamo",
    ]
    assert "npm:onnxruntime-node" in INDEX.asked


def test_include_and_exclude_by_runner() -> None:
    plan = planning.expand(
        cfg(
            runners=("python", "node"),
            runtimes=("1.20.1", "1.24.1"),
            exclude=({"runner": "node", "runtime": "1.20.*"}, {"runner": "python", "runtime": "1.24.1"}),
            include=(
                {
                    "runner": "node",
                    "runtime": "1.20.1",
                    "provider": "cpu",
                    "opset": "18",
                    "exporter": "dynamo",
                },
            ),
        ),
        INDEX,
    )
    assert [t.id for t in plan.targets] == [
        "ort1.20.1-cpu-op17-dynamo",
        "node-ort1.20.1-cpu-op18-dynamo",
        "node-ort1.24.1-cpu-op17-dynamo",
    ]


def test_a_runner_that_offers_none_of_the_providers_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"targets.runners: the node runner offers cpu"):
        planning.expand(cfg(runners=("node",), providers=("openvino",)), INDEX)
    with pytest.raises(ConfigError, match=r"targets.include\[0\].runner: 'node' cannot run openvino"):
        planning.expand(
            cfg(
                include=(
                    {
                        "runner": "node",
                        "runtime": "1.24.1",
                        "provider": "openvino",
                        "opset": "17",
                        "exporter": "dynamo",
                    },
                )
            ),
            INDEX,
        )


def test_an_exact_node_release_npm_lacks_is_a_config_error_naming_the_nearest() -> None:
    with pytest.raises(
        ConfigError, match=r"onnxruntime-node has no release 1.22.0 .*nearest: 1.20.1, 1.24.1"
    ):
        planning.expand(cfg(runners=("node",), runtimes=("1.22.0",)), INDEX)


def test_each_cell_is_routed_to_the_job_its_kind_declares() -> None:
    plan = planning.expand(
        cfg(runners=("python", "node"), providers=("cpu", "cuda"), runtimes=("1.24.*",)),
        FakeIndex({**INDEX.releases, "onnxruntime-gpu": ["1.24.4"]}),
    )
    jobs = {t.id: cijobs.job_of(t) for t in plan.targets}
    assert jobs == {
        "ort1.24.4-cpu-op17-dynamo": "container",
        "ort1.24.4-cuda-op17-dynamo": "runner",
        "node-ort1.24.1-cpu-op17-dynamo": "node",
    }
    (node,) = [v.entry() for v in cijobs.verify_jobs(plan) if v.job == "node"]
    assert (node["package"], node["runs-on"], node["runner"]) == (
        "onnxruntime-node",
        ["ubuntu-latest"],
        "node",
    )
    out = cijobs.github_outputs(plan)
    assert (out["container-targets"], out["runner-targets"], out["node-targets"]) == ("1", "1", "1")
    assert "node-ort1.24.1-cpu-op17-dynamo" in out["matrix-node"]
    assert "node-ort" not in out["matrix"] + out["matrix-runner"]


def test_what_a_runner_could_not_measure_is_skipped_with_its_reason(tmp_path: Path) -> None:
    b = bundles.mlp_bundle(tmp_path / "mlp")
    manifest = bundle.read_manifest(b)
    target = Target(manifest_runtime := "1.24.1", "cpu", 17, "onnx", runner="node")
    obs = Observation(
        SCHEMA_VERSION,
        target.id,
        Environment(
            manifest_runtime, ("CPUExecutionProvider",), ("CPUExecutionProvider",), "Linux", "ort-node"
        ),
        outputs={ds.directory: {"logits": f"{ds.directory}/output_0.pb"} for ds in manifest.test_data_sets},
    )
    checks = {
        c.name: c
        for c in judge.judge(
            target, manifest, obs, evidence.load(manifest, obs, b, b), VerifyOptions()
        ).checks
    }
    assert checks["fallback"].status == Status.ERROR  # nothing said why: an error, as before
    declared = dataclasses.replace(obs, unmeasured={"placement": "no profile", "memory": "no RSS here"})
    result = judge.judge(target, manifest, declared, evidence.load(manifest, declared, b, b), VerifyOptions())
    checks = {c.name: c for c in result.checks}
    assert checks["fallback"].status == Status.SKIPPED
    assert checks["fallback"].message == "not measured by this runner: no profile"
    assert checks["memory"].message == "not measured by this runner: no RSS here"
    assert checks["parity[logits]"].status == Status.PASSED
    assert result.status != Status.ERROR


def test_the_action_installs_no_python_runtime_for_a_node_cell() -> None:
    from ci_onnx.action import runtime

    assert not runtime.plan_change("node-ort1.24.1-cpu-op17-dynamo", lambda p: "").needed
    assert (
        runtime.plan_change("ort1.24.1-cpu-op17-dynamo", lambda p: "").requirements[0]
        == "onnxruntime==1.24.1"
    )


def test_a_nightly_family_keeps_its_runner_and_asks_its_registry() -> None:
    from ci_onnx.nightly.families import FamilyKey

    node = FamilyKey.of(Target("1.30.0", "cpu", 17, "dynamo", runtime_spec="latest", runner="node"))
    python = FamilyKey.of(Target("1.32.0", "cpu", 17, "dynamo", runtime_spec="latest"))
    assert (node.id, python.id) == ("node-cpu-op17-dynamo@latest", "cpu-op17-dynamo@latest")
    assert (node.package, python.package) == ("npm:onnxruntime-node", "onnxruntime")
    assert node.cell != python.cell


@pytest.mark.parametrize("kind", ["python", "node"])
def test_no_token_of_any_name_reaches_a_runner_process(kind: str, tmp_path: Path) -> None:
    b = bundles.mlp_bundle(tmp_path / "mlp")
    program = tmp_path / "fake-runtime"
    program.write_text(f'#!/bin/sh\nenv > "{tmp_path}/seen-env"\n')
    program.chmod(0o755)
    env = base.RunnerEnv(kind, "1.24.1", tmp_path, str(program), "onnxruntime-node")
    secrets = {"GITHUB_TOKEN": "t", "NODE_AUTH_TOKEN": "t", "NPM_CONFIG__AUTH": "t", "HF_TOKEN": "t"}
    target = Target("1.24.1", "cpu", 17, "onnx", runner=kind)
    done = base.get(kind).launch(
        env,
        base.Launch(b, target, tmp_path / "obs", VerifyOptions(timeout_s=30), "CPUExecutionProvider"),
        base_env={"PATH": "/usr/bin:/bin", "NPM_CONFIG_REGISTRY": "https://registry.example", **secrets},
    )
    assert done.ok, done.describe_failure()
    seen = dict(
        line.split("=", 1) for line in (tmp_path / "seen-env").read_text().splitlines() if "=" in line
    )
    assert not set(secrets) & set(seen)
    assert "PATH" in seen


def test_the_package_data_ships_every_runner_program() -> None:
    import fnmatch
    import tomllib

    root = Path(__file__).parents[2]
    globs = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"][
        "ci_onnx"
    ]
    programs = [
        p.relative_to(root / "ci_onnx").as_posix() for p in (root / "ci_onnx" / "runners").rglob("*.mjs")
    ]
    assert programs
    assert all(any(fnmatch.fnmatchcase(p, g) for g in globs) for p in programs), programs
