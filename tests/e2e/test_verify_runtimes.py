"""`onnx-gate verify` on real runtimes, each in its own cached environment (numpy + one onnxruntime).

Three environments, built once and kept in pytest's cache directory across runs: the latest
onnxruntime (CPU), an old onnxruntime that cannot load opset 21, and onnxruntime-openvino.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pytest
from click.testing import CliRunner

from ci_onnx.cli import cli
from ci_onnx.contracts import proc, schema, serde
from ci_onnx.contracts.results import Observation, read_result
from ci_onnx.contracts.target import Target
from ci_onnx.host import envs
from tests import bundles
from tests.support.cells import DIE_ENV, python_kind_hooked
from tests.unit.test_verify_junit import assert_valid_junit

pytestmark = pytest.mark.e2e

ORT_LATEST = "1.32.0"  # the newest onnxruntime on the index when this test was written
ORT_OLD = "1.17.3"  # loads opset <= 20 and IR <= 9
OPENVINO = "1.24.1"
EXAMPLES = Path(__file__).parents[2] / "examples" / "tinycnn"


def _python(cache: Path, package: str, version: str) -> str:
    return str(envs.ensure(package, version, cache, uv=envs.find_uv()).python)


@pytest.fixture(scope="session")
def ort_latest(env_cache: Path) -> str:
    return _python(env_cache, "onnxruntime", ORT_LATEST)


@pytest.fixture(scope="session")
def ort_old(env_cache: Path) -> str:
    return _python(env_cache, "onnxruntime", ORT_OLD)


@pytest.fixture(scope="session")
def ort_openvino(env_cache: Path) -> str:
    return _python(env_cache, "onnxruntime-openvino", OPENVINO)


@pytest.fixture(scope="session")
def bundle_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("bundles")


def verify(
    bundle: Path, target: str, out: Path, python: str, *extra: str, env: dict[str, str] | None = None
) -> tuple[int, dict[str, Any]]:
    """Run the command; check that the result JSON matches its schema and the JUnit validates."""
    args = [
        "verify",
        "--bundle",
        str(bundle),
        "--target",
        target,
        "--out",
        str(out),
        "--python",
        python,
        *extra,
    ]
    result = CliRunner(env=env).invoke(cli, args)
    path = out / "results" / f"{target}.json"
    assert path.is_file(), result.output
    data = json.loads(path.read_text())
    jsonschema.validate(data, schema.load_schema("target-result.schema.json"))
    read_result(path)
    assert_valid_junit(out / "junit" / f"{target}.xml")
    return result.exit_code, data


def checks(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in data["checks"]}


def test_latest_cpu_on_the_example_bundle(bundle_root: Path, ort_latest: str, tmp_path: Path) -> None:
    digitnet = bundles.digitnet_bundle(bundle_root / "digitnet", EXAMPLES)
    target = f"ort{ORT_LATEST}-cpu-op17-torchscript"
    code, data = verify(digitnet, target, tmp_path, ort_latest)
    assert code == 0 and data["status"] == "passed", data["summary"]
    c = checks(data)
    assert list(c) == [
        "export", "load", "provider", "parity[logits]", "decision",
        "optimized-cache", "batch[1]", "batch[8]", "batch[32]", "fallback", "latency", "memory", "cold-start",
    ]  # fmt: skip
    assert c["cold-start"]["status"] == "passed" and data["observation"]["serving"]["cold_start_ms"] > 0
    assert data["observation"]["environment"]["runtime_version"] == ORT_LATEST
    n = 16 + len(np.load(EXAMPLES / "samples.npz")["image"])  # random inputs + the held-out digits
    assert data["parity"][0]["elements"] == n * 10 and data["parity"][0]["out_of_tolerance"] == 0
    assert data["decisions"] == {"output": "logits", "top_k": 1, "changed": 0, "total": n}
    assert [s["batch_size"] for s in data["observation"]["latency"]] == [1, 8, 32]
    assert all(0 < s["p50_ms"] <= s["p90_ms"] <= s["p99_ms"] for s in data["observation"]["latency"])
    assert data["observation"]["session_create_ms"] > 0 and data["observation"]["peak_rss_mb"] > 10
    placement = data["observation"]["placement"]
    assert set(placement["nodes_by_provider"]) == {"CPUExecutionProvider"}
    assert placement["fallback_nodes"] == [] and placement["time_us_by_provider"]["CPUExecutionProvider"] > 0


def test_openvino_fallback_table_names_exactly_the_cpu_nodes(
    bundle_root: Path, ort_openvino: str, tmp_path: Path
) -> None:
    b = bundles.write_bundle(
        bundle_root / "partly_cpu",
        bundles.partly_cpu(),
        bundles.PARTLY_CPU_SPEC,
        bundles.random_sets(bundles.PARTLY_CPU_SPEC.inputs, 16),
    )
    target = f"ort{OPENVINO}-openvino-op17-onnx"
    code, data = verify(b, target, tmp_path / "default", ort_openvino)
    c = checks(data)
    assert c["provider"]["status"] == "passed", c["provider"]["message"]
    assert c["parity[onehot]"]["status"] == "passed" and c["parity[det]"]["status"] == "passed"
    fell = {(n["name"], n["op_type"]) for n in data["observation"]["placement"]["fallback_nodes"]}
    assert fell == {("the_det", "Det"), ("the_hardmax", "Hardmax")}
    assert all(
        n["provider"] == "CPUExecutionProvider" for n in data["observation"]["placement"]["fallback_nodes"]
    )
    assert data["observation"]["placement"]["nodes_by_provider"]["OpenVINOExecutionProvider"] == 3
    assert "the_det (Det)" in c["fallback"]["message"]
    share = c["fallback"]["figures"]["cpu_time_share"]
    assert (code == 0) == (share <= 0.05)

    # A budget of zero CPU time fails the target, with the same table.
    config = tmp_path / "onnx-gate.yml"
    config.write_text("version: 1\nmodel: {onnx: model.onnx}\nbudgets: {cpu_fallback: {max_time_share: 0}}\n")
    code, data = verify(b, target, tmp_path / "budget", ort_openvino, "--config", str(config))
    assert code == 1 and checks(data)["fallback"]["status"] == "failed"
    assert "over the budget of 0.0%" in data["summary"]

    # Strict mode: the runtime itself refuses a session that falls back to CPU.
    config.write_text("version: 1\nmodel: {onnx: model.onnx}\nverify: {strict_fallback: true}\n")
    code, data = verify(b, target, tmp_path / "strict", ort_openvino, "--config", str(config))
    fallback = checks(data)["fallback"]
    assert code == 1 and fallback["status"] == "failed"
    assert "fallback to CPU EP has been explicitly disabled" in fallback["message"]


@pytest.mark.parametrize(
    ("provider_key", "ep"),
    [
        ("openvino", "OpenVINOExecutionProvider"),
        ("cuda", "CUDAExecutionProvider"),
        ("tensorrt", "TensorrtExecutionProvider"),
    ],
)
def test_a_provider_the_package_lacks_fails_the_provider_check(
    bundle_root: Path, ort_latest: str, tmp_path: Path, provider_key: str, ep: str
) -> None:
    """The CPU package on a machine without a GPU stands in for a GPU runner whose driver is missing."""
    b = bundles.mlp_bundle(bundle_root / f"mlp_for_{provider_key}")
    code, data = verify(b, f"ort{ORT_LATEST}-{provider_key}-op17-onnx", tmp_path, ort_latest)
    provider = checks(data)["provider"]
    assert code == 1 and provider["status"] == "failed"
    assert provider["message"].startswith(f"asked for {ep}, got CPUExecutionProvider")


def test_old_runtime_cannot_load_the_opset(bundle_root: Path, ort_old: str, tmp_path: Path) -> None:
    b = bundles.mlp_bundle(bundle_root / "mlp21", opset=21)
    code, data = verify(b, f"ort{ORT_OLD}-cpu-op21-onnx", tmp_path, ort_old)
    load = checks(data)["load"]
    assert code == 0 and data["status"] == "expected" and load["status"] == "expected"
    assert "opset 21 needs onnxruntime >= 1.18" in load["message"]
    # the runtime's own sentence, without its status prefix and C++ signature
    assert "the runtime says: Load model from " in load["message"]
    assert "Unsupported model IR version: 10, max supported IR version: 9" in load["message"]
    assert "[ONNXRuntimeError]" not in load["message"] and "onnxruntime::" not in load["message"]
    assert data["observation"]["environment"]["runtime_version"] == ORT_OLD
    # The same bundle on the old runtime's numpy<2 environment loads at an opset it knows.
    ok = bundles.mlp_bundle(bundle_root / "mlp17")
    code, data = verify(ok, f"ort{ORT_OLD}-cpu-op17-onnx", tmp_path, ort_old)
    assert code == 0 and data["status"] == "passed", data["summary"]
    assert data["observation"]["placement"]["source"] == "profile"  # 1.17 has no assignment info


def test_perturbed_reference_fails_parity_and_decision_with_figures(
    bundle_root: Path, ort_latest: str, tmp_path: Path
) -> None:
    def swap_first_rows(set_index: int, output_index: int, ref: Any) -> Any:
        ref = ref.copy()
        if set_index == 0:
            ref[:3] = ref[:3, ::-1] * 2  # three rows with their classes reversed
        return ref

    b = bundles.mlp_bundle(bundle_root / "perturbed", perturb=swap_first_rows)
    code, data = verify(b, f"ort{ORT_LATEST}-cpu-op17-onnx", tmp_path, ort_latest)
    c = checks(data)
    assert code == 1 and data["status"] == "failed"
    parity = data["parity"][0]
    assert c["parity[logits]"]["status"] == "failed"
    assert 0 < parity["out_of_tolerance"] <= 12 and parity["elements"] == (16 + 5) * 4
    assert parity["max_abs"] > 0.1 and parity["max_rel"] > 0.1
    assert c["decision"]["status"] == "failed"
    assert data["decisions"]["changed"] == 3 and data["decisions"]["total"] == 21
    assert c["batch[8]"]["status"] == "passed"  # the model itself is consistent


def test_frozen_batch_axis_fails_the_batch_check(bundle_root: Path, ort_latest: str, tmp_path: Path) -> None:
    model = bundles.mlp(batch=1)
    sets = bundles.random_sets(bundles.MLP_SPEC.inputs, 16, samples=5)
    b = bundles.write_bundle(bundle_root / "frozen", model, bundles.MLP_SPEC, sets)
    code, data = verify(b, f"ort{ORT_LATEST}-cpu-op17-onnx", tmp_path, ort_latest)
    c = checks(data)
    assert code == 1 and c["parity[logits]"]["status"] == "passed"  # run one sample at a time
    assert c["batch[1]"]["status"] == "passed"
    assert c["batch[8]"]["status"] == "failed"
    assert "batch axis of input 'x' is fixed at 1" in c["batch[8]"]["message"]


@pytest.mark.parametrize(
    ("how", "says"),
    [("SIGKILL", "killed by SIGKILL"), ("SIGSEGV", "killed by SIGSEGV"), ("hang", "timed out")],
)
def test_a_runtime_that_dies_is_an_error_and_the_next_target_still_runs(
    bundle_root: Path,
    ort_latest: str,
    ort_openvino: str,
    tmp_path: Path,
    how: str,
    says: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    python_kind_hooked(tmp_path / "hooks", monkeypatch.setattr)
    b = bundle_root / "mlp_die"
    if not b.exists():
        bundles.mlp_bundle(b)
    dying = f"ort{ORT_LATEST}-cpu-op17-onnx"
    code, data = verify(b, dying, tmp_path, ort_latest, "--timeout", "8", env={DIE_ENV: how})
    assert code == 1 and data["status"] == "error"
    assert checks(data)["runner"]["status"] == "error" and says in data["summary"]
    code, data = verify(b, f"ort{OPENVINO}-openvino-op17-onnx", tmp_path, ort_openvino)
    assert data["status"] in ("passed", "failed") and checks(data)["provider"]["status"] == "passed"
    assert read_result(tmp_path / "results" / f"{dying}.json").status == "error"
    shutil.rmtree(tmp_path / "observations", ignore_errors=True)


@pytest.mark.parametrize("method", ["profile", "verbose-log"])
def test_every_placement_source_names_the_same_fallback_nodes(
    bundle_root: Path, ort_openvino: str, tmp_path: Path, method: str
) -> None:
    """Older runtimes lack assignment info; the profile trace and the verbose log must agree with it."""
    b = bundle_root / "partly_cpu_sources"
    if not b.exists():
        spec = bundles.PARTLY_CPU_SPEC
        bundles.write_bundle(b, bundles.partly_cpu(), spec, bundles.random_sets(spec.inputs, 4))
    target = Target(OPENVINO, "openvino", 17, "onnx")
    args = [
        ort_openvino,
        "-m",
        "ci_onnx.observer.ort",
        "--bundle",
        str(b),
        "--ep",
        "OpenVINOExecutionProvider",
    ]
    args += ["--target-json", serde.dumps(target), "--out", str(tmp_path), "--placement", method]
    done = proc.run(args, timeout=120, env={"PYTHONPATH": str(Path(__file__).parents[2])})
    assert done.ok, done.stderr
    raw = json.loads((tmp_path / "observation.json").read_text())
    jsonschema.validate(raw, schema.load_schema("observation.schema.json"))
    obs = serde.from_json(Observation, raw)
    assert obs.placement is not None and obs.placement.source == method
    assert {(n.name, n.op_type) for n in obs.placement.fallback_nodes} == {
        ("the_det", "Det"),
        ("the_hardmax", "Hardmax"),
    }


def test_a_runtime_other_than_the_target_asks_for_is_an_error(
    bundle_root: Path, ort_latest: str, tmp_path: Path
) -> None:
    b = bundle_root / "mlp_mismatch"
    bundles.mlp_bundle(b)
    code, data = verify(b, "ort1.20.1-cpu-op17-onnx", tmp_path, ort_latest)
    runtime = checks(data)["runtime"]
    assert code == 1 and data["status"] == "error" and runtime["status"] == "error"
    assert f"asks for onnxruntime 1.20.1, the environment holds {ORT_LATEST}" in runtime["message"]


def test_an_ir_version_too_new_for_the_runtime_is_an_expected_skip_with_the_runtimes_words(
    bundle_root: Path, ort_old: str, tmp_path: Path
) -> None:
    b = bundles.write_bundle(
        bundle_root / "mlp_ir10",
        bundles.mlp(opset=17, ir_version=10),
        bundles.MLP_SPEC,
        bundles.random_sets(bundles.MLP_SPEC.inputs, 4),
    )
    code, data = verify(b, f"ort{ORT_OLD}-cpu-op17-onnx", tmp_path, ort_old)
    load = checks(data)["load"]
    assert code == 0 and data["status"] == "expected" and load["status"] == "expected"
    assert "onnxruntime 1.17 loads IR version <= 9; the exported file has IR 10" in load["message"]
    assert "Unsupported model IR version: 10, max supported IR version: 9" in load["message"]
