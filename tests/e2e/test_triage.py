"""Triage on planted faults, each in a real export verified on a real onnxruntime environment: every
case must name its fault class and its node, and its reproduction must reproduce on its own.

| case | the fault | the class and node it must name |
|---|---|---|
| denormal | session.set_denormal_as_zero on activations scaled to 1e-39 | runtime, the Mul of ``up`` |
| ceil pool | onnxruntime 1.24.1's AveragePool with ceil_mode (fixed in 1.29) | runtime, ``pool``'s AveragePool |
| wrong symbolic | a TorchScript symbolic exports GELU as x·sigmoid(1.702x) | export, the last Mul of ``act`` |
| outlier int8 | int8-dynamic weights with one outlier in ``head`` lose the decision | precision, ``head``'s Gemm |
| tight tolerance | atol far below float32 rounding | tolerance, with an atol that passes |
| every kind | the same, through the node, native and web runners' own runs | tolerance, observed by each kind |

The optimization class (a QDQ Conv fused into QLinearConv) is planted on an ONNX-only bundle in
tests/unit/test_triage_attach.py, where this interpreter's onnxruntime is the target's release.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ci_onnx.cli import cli
from ci_onnx.host import envs

pytestmark = pytest.mark.e2e

ORT = "1.32.0"
OLD = "1.24.1"
MODELS = Path(__file__).parent / "triage" / "models.py"


@pytest.fixture(scope="module")
def python(env_cache: Path) -> str:
    """The target's own environment (numpy and onnxruntime 1.32.0 only), as `onnx-gate run` makes it."""
    return str(envs.ensure("onnxruntime", ORT, env_cache, uv=envs.find_uv()).python)


def config(
    directory: Path,
    factory: str,
    *,
    exporter: str = "dynamo",
    precisions: tuple[str, ...] = ("fp32",),
    verify: dict[str, Any] | None = None,
    targets: dict[str, Any] | None = None,
    shape: tuple[int | str, ...] = ("batch", 16),
) -> Path:
    """An onnx-gate.yml (JSON is YAML) for one planted model: opset 18, one exporter, onnxruntime 1.32.0."""
    cfg = {
        "version": 1,
        "model": {
            "name": factory,
            "factory": f"{MODELS}:{factory}",
            "inputs": {"x": {"shape": list(shape), "dtype": "float32"}},
            "outputs": ["y"],
            "dynamic_axes": {"x": {"0": "batch"}, "y": {"0": "batch"}},
        },
        "export": {"opsets": [18], "exporters": [exporter], "precisions": list(precisions), "cache": False},
        "verify": {
            "random_inputs": 16,
            "batch_sizes": [],
            "serving_figures": False,
            "latency_runs": 2,
            "decision": {"output": "y"},
            **(verify or {}),
        },
        "targets": {"runtimes": [ORT], "providers": ["cpu"], **(targets or {})},
    }
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "onnx-gate.yml"
    path.write_text(json.dumps(cfg, indent=2))
    return path


def verified(cfg: Path, bundle_key: str, target: str, python: str) -> dict[str, Any]:
    out = cfg.parent / "out"
    exported = CliRunner().invoke(cli, ["export", "--config", str(cfg), "--out", str(cfg.parent / "bundles")])
    assert (cfg.parent / "bundles" / bundle_key / "model.onnx").is_file(), exported.output
    res = CliRunner().invoke(cli, [
        "verify", "--bundle", str(cfg.parent / "bundles" / bundle_key), "--target", target,
        "--config", str(cfg), "--out", str(out), "--python", python,
    ])  # fmt: skip
    assert res.exit_code == 1, res.output  # the cell fails, and its triage never changes that
    result: dict[str, Any] = json.loads((out / "results" / f"{target}.json").read_text())
    assert result["status"] == "failed"
    return result


def reproduces(triage: dict[str, Any], out: Path, python: str) -> None:
    """The reproduction alone, in the target's environment: exit 1 is 'the divergence reproduces'."""
    where = out / triage["reproduction"]
    assert (where / "model.onnx").is_file() and (where / "test_data_set_0" / "input_0.pb").is_file()
    assert triage["reproduction_bytes"] == sum(p.stat().st_size for p in where.rglob("*") if p.is_file())
    done = subprocess.run([python, str(where / "reproduce.py")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "REPRODUCES" in done.stdout
    print(f"reproduction {where.name}: {triage['reproduction_bytes']} bytes; triage {triage['duration_s']} s")


def test_flushed_denormals_are_a_runtime_fault_at_the_mul_that_reads_them(
    tmp_path: Path, python: str
) -> None:
    cfg = config(
        tmp_path,
        "denormal",
        targets={"session_options": ["ftz"]},  # the built-in preset that flushes denormals
    )
    result = verified(cfg, "op18-dynamo", f"ort{ORT}-cpu-op18-dynamo-so-ftz", python)
    t = result["triage"]
    assert (t["fault"], t["op_type"], t["torch_origin"].split(" ")[0]) == ("runtime", "Mul", "up"), t
    assert t["stopped"] == "" and any("subnormal" in e for e in t["evidence"])
    assert [r["share"] > 1 for r in t["path"]][-2:] == [True, True]  # the error grows downstream of it
    reproduces(t, tmp_path / "out", python)
    # on demand, the command finds the same: it reads the result, writes triage.json and the result again
    target = f"ort{ORT}-cpu-op18-dynamo-so-ftz"
    res = CliRunner().invoke(cli, [
        "triage", "--bundle", str(tmp_path / "bundles" / "op18-dynamo"), "--target", target,
        "--out", str(tmp_path / "out"), "--config", str(cfg), "--python", python,
    ])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert res.output.startswith(f"{target}: runtime fault at {t['node']} (Mul"), res.output
    again = json.loads((tmp_path / "out" / "triage" / target / "triage.json").read_text())
    assert (again["fault"], again["node"]) == (t["fault"], t["node"])


def test_a_release_with_a_known_numeric_difference_is_a_runtime_fault_there_and_not_after(
    tmp_path: Path, python: str, env_cache: Path
) -> None:
    """onnxruntime 1.24.1 averages ceil_mode's partial windows over the whole kernel; 1.29 fixed it."""
    old = str(envs.ensure("onnxruntime", OLD, env_cache, uv=envs.find_uv()).python)
    cfg = config(tmp_path, "ceil_pool", shape=("batch", 1, 8, 8), targets={"runtimes": [OLD]})
    result = verified(cfg, "op18-dynamo", f"ort{OLD}-cpu-op18-dynamo", old)
    t = result["triage"]
    assert (t["fault"], t["node"], t["op_type"], t["torch_origin"].split(" ")[0]) == (
        "runtime", "node_avg_pool2d", "AveragePool", "pool"
    ), t  # fmt: skip
    assert f"onnxruntime {OLD}" in t["summary"]
    reproduces(t, tmp_path / "out", old)
    fixed = subprocess.run([python, str(tmp_path / "out" / t["reproduction"] / "reproduce.py")],
                           capture_output=True, text=True, timeout=120)  # fmt: skip
    assert fixed.returncode == 0 and "no divergence" in fixed.stdout, fixed.stdout + fixed.stderr  # on 1.32.0


def test_run_keeps_a_flush_to_zero_cell_apart_so_its_verdict_is_verify_s(
    tmp_path: Path, env_cache: Path
) -> None:
    """Beside a default cell of the same environment, the ftz cell still flushes (a process of its
    own: onnxruntime keeps the first session's flush-to-zero on its thread) and is triaged as alone."""
    cfg = config(tmp_path, "denormal", targets={"session_options": ["default", "ftz"]})
    res = CliRunner().invoke(cli, ["run", "--config", str(cfg), "--out", str(tmp_path / "out"),
                                   "--cache-dir", str(env_cache), "--jobs", "1"])  # fmt: skip
    assert res.exit_code == 1, res.output
    results = tmp_path / "out" / "results"
    plain = json.loads((results / f"ort{ORT}-cpu-op18-dynamo.json").read_text())
    ftz = json.loads((results / f"ort{ORT}-cpu-op18-dynamo-so-ftz.json").read_text())
    assert plain["status"] == "passed" and "triage" not in plain
    assert ftz["status"] == "failed" and ftz["triage"]["fault"] == "runtime", ftz["summary"]


def test_the_same_model_without_flushing_passes_and_is_not_triaged(tmp_path: Path, python: str) -> None:
    cfg = config(tmp_path, "denormal")
    CliRunner().invoke(cli, ["export", "--config", str(cfg), "--out", str(tmp_path / "bundles")])
    res = CliRunner().invoke(cli, [
        "verify", "--bundle", str(tmp_path / "bundles" / "op18-dynamo"), "--target", f"ort{ORT}-cpu-op18-dynamo",
        "--config", str(cfg), "--out", str(tmp_path / "out"), "--python", python,
    ])  # fmt: skip
    assert res.exit_code == 0, res.output
    result = json.loads((tmp_path / "out" / "results" / f"ort{ORT}-cpu-op18-dynamo.json").read_text())
    assert "triage" not in result and not (tmp_path / "out" / "triage").exists()


def test_a_wrong_symbolic_is_an_export_fault_at_the_module_it_exported(tmp_path: Path, python: str) -> None:
    cfg = config(tmp_path, "wrong_symbolic", exporter="torchscript")
    result = verified(cfg, "op18-torchscript", f"ort{ORT}-cpu-op18-torchscript", python)
    t = result["triage"]
    assert (t["fault"], t["op_type"], t["torch_origin"]) == ("export", "Mul", "act"), t
    assert t["node"] == "/model/act/Mul_1", t  # the last Mul of the symbolic: x * sigmoid(1.702 x)
    reproduces(t, tmp_path / "out", python)


def test_an_int8_layer_that_loses_the_decision_is_a_precision_fault_at_that_layer(
    tmp_path: Path, python: str
) -> None:
    cfg = config(
        tmp_path,
        "outlier",
        precisions=("fp32", "int8-dynamic"),
        verify={"precision_tolerance": {"int8-dynamic": {"atol": 100, "rtol": 1}}},
    )
    result = verified(cfg, "op18-dynamo-int8-dynamic", f"ort{ORT}-cpu-op18-dynamo-int8-dynamic", python)
    t = result["triage"]
    assert t["check"] == "decision"
    assert (t["fault"], t["node"], t["op_type"]) == ("precision", "node_linear_1", "Gemm"), t
    assert t["torch_origin"] == "head (models.py:57)", t  # Mlp.forward's line that calls head
    assert any("MatMulInteger" in e for e in t["evidence"])
    reproduces(t, tmp_path / "out", python)


def test_a_tolerance_below_rounding_is_a_tolerance_fault_with_one_that_passes(
    tmp_path: Path, python: str
) -> None:
    cfg = config(tmp_path, "mlp", verify={"tolerance": {"atol": 5.0e-8, "rtol": 0}})
    result = verified(cfg, "op18-dynamo", f"ort{ORT}-cpu-op18-dynamo", python)
    t = result["triage"]
    assert t["fault"] == "tolerance", t
    assert t["reproduction"] == ""  # no node to reproduce: the bound is the fix
    suggested = t["suggested_tolerance"]
    assert 0 < suggested["atol"] < 1e-5 and suggested["rtol"] == 0
    print(f"tolerance case: triage {t['duration_s']} s, suggested atol {suggested['atol']}")
    # the suggested tolerance passes the same export on the same runtime
    again = config(tmp_path / "again", "mlp", verify={"tolerance": {"atol": suggested["atol"], "rtol": 0}})
    CliRunner().invoke(cli, ["export", "--config", str(again), "--out", str(again.parent / "bundles")])
    res = CliRunner().invoke(cli, [
        "verify", "--bundle", str(again.parent / "bundles" / "op18-dynamo"), "--target", f"ort{ORT}-cpu-op18-dynamo",
        "--config", str(again), "--out", str(again.parent / "out"), "--python", python,
    ])  # fmt: skip
    assert res.exit_code == 0, res.output


NODE_RELEASE = "1.24.1"


@pytest.mark.browser
def test_run_triages_each_kinds_cell_through_its_own_runner(tmp_path: Path, env_cache: Path) -> None:
    """`onnx-gate run` triages a failing cell of every runner kind through that kind's own runner:
    onnxruntime-node, the C API (native) and onnxruntime-web in Chromium (web, wasm) each observe the
    exposed graph, beside the python cell of the same release."""
    cfg = config(tmp_path, "mlp", verify={"tolerance": {"atol": 5.0e-8, "rtol": 0}},
                 targets={"runtimes": [NODE_RELEASE], "providers": ["cpu", "wasm"],
                          "runners": ["python", "node", "native", "web"]})  # fmt: skip
    res = CliRunner().invoke(cli, ["run", "--config", str(cfg), "--out", str(tmp_path / "out"),
                                   "--cache-dir", str(env_cache), "--jobs", "1"])  # fmt: skip
    assert res.exit_code == 1, res.output
    cells = {"": "cpu", "node-": "cpu", "native-": "cpu", "web-": "wasm"}
    for prefix, provider in cells.items():
        target = f"{prefix}ort{NODE_RELEASE}-{provider}-op18-dynamo"
        t = json.loads((tmp_path / "out" / "results" / f"{target}.json").read_text())["triage"]
        assert t["fault"] == "tolerance", t
        who = f"the {prefix[:-1]} runner" if prefix else "the target"
        assert any(c.startswith(f"{who} as it ran (") for c in t["compared"]), t["compared"]
        assert any(c.startswith(f"{who} ") and "every value exposed" in c for c in t["compared"]), t[
            "compared"
        ]
        print(f"{target}: triage {t['duration_s']} s, suggested atol {t['suggested_tolerance']['atol']}")
