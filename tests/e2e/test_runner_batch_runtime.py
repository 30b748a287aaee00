"""One runner process for several targets of one environment, on a real onnxruntime: the same
results as one process per target, and a crash or hang in the middle costs only its own target."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from ci_onnx.contracts import proc
from ci_onnx.contracts.target import Target
from ci_onnx.contracts.verify_options import VerifyOptions
from ci_onnx.runners import base
from ci_onnx.verify import stage
from tests import bundles
from tests.support.cells import DIE_ENV, hooked

pytestmark = pytest.mark.e2e

ORT = "1.32.0"
EXAMPLES = Path(__file__).parents[2] / "examples" / "tinycnn"
OPTIONS = VerifyOptions(latency_runs=5, timeout_s=60)
DETERMINED = ("export", "load", "provider", "parity[", "decision", "batch[")
"""Checks whose every figure the runtime determines (the rest are timings and memory)."""


@pytest.fixture(scope="module")
def environment(env_cache: Path) -> base.RunnerEnv:
    from ci_onnx.host import envs

    how = base.Provisioning(env_cache, proc.child_environment(os.environ), envs.find_uv())
    return base.provision(Target(ORT, "cpu", 17, "onnx"), how)


@pytest.fixture(scope="module")
def items(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Path, Target]]:
    """The example DigitNet (torch-exported) and the MLP at two more opsets: three targets of one
    environment, each with its own bundle."""
    root = tmp_path_factory.mktemp("batch-bundles")
    out = [(bundles.digitnet_bundle(root / "digitnet", EXAMPLES), Target(ORT, "cpu", 17, "torchscript"))]
    for opset in (18, 19):
        out.append((bundles.mlp_bundle(root / f"mlp{opset}", opset=opset), Target(ORT, "cpu", opset, "onnx")))
    return out


def verdict(result_path: Path) -> dict[str, Any]:
    """A result without what no two runs share (when, how long, latency, memory, node timings)."""
    data = json.loads(result_path.read_text())
    checks = []
    for c in data["checks"]:
        if c["name"].startswith(DETERMINED):
            checks.append({k: v for k, v in c.items() if k != "duration_s"})
        elif c["name"] == "fallback":
            figures = {
                k: v for k, v in c["figures"].items() if k not in ("time_us_by_provider", "cpu_time_share")
            }
            checks.append({"name": c["name"], "status": c["status"], "figures": figures})
        else:
            checks.append({"name": c["name"], "status": c["status"]})
    obs = data.get("observation") or {}
    placement = {k: v for k, v in (obs.get("placement") or {}).items() if k != "time_us_by_provider"}
    latency = [(s["batch_size"], s["runs"]) for s in obs.get("latency") or []]
    keep = ("target", "status", "summary", "parity", "decisions", "bundle", "reproduce")
    return {
        **{k: data.get(k) for k in keep},
        "environment": obs.get("environment"),
        "checks": checks,
        "placement": placement,
        "latency": latency,
    }


def outputs(obs_dir: Path) -> dict[str, bytes]:
    return {str(p.relative_to(obs_dir)): p.read_bytes() for p in sorted(obs_dir.rglob("*.pb"))}


def test_one_process_for_every_target_gives_the_results_one_process_each_gives(
    environment: base.RunnerEnv, items: list[tuple[Path, Target]], tmp_path: Path
) -> None:
    env = proc.child_environment(os.environ)
    each, together = tmp_path / "each", tmp_path / "together"
    for b, t in items:
        stage.verify(b, t, each, OPTIONS, base_env=env, environment=environment)
    heard: list[int] = []
    found = stage.verify_many(
        items,
        together,
        OPTIONS,
        base_env=env,
        environment=environment,
        on_written=lambda i, _w: heard.append(i),
    )
    assert sorted(heard) == [0, 1, 2]
    for (_, t), w in zip(items, found, strict=True):
        assert not isinstance(w, Exception), w
        assert w.result.status.value == "passed", w.result.summary
        one = verdict(each / "results" / f"{t.id}.json")
        assert verdict(w.result_path) == one, t.id
        obs = Path("observations") / t.id
        assert outputs(together / obs) == outputs(each / obs) and outputs(each / obs), t.id
        assert (together / "junit" / f"{t.id}.xml").is_file()


@pytest.mark.parametrize(("how", "says"), [("SIGSEGV", "killed by SIGSEGV"), ("hang", "timed out after 8 s")])
def test_a_crash_or_hang_in_the_middle_is_that_targets_error_and_the_rest_pass(
    environment: base.RunnerEnv,
    items: list[tuple[Path, Target]],
    tmp_path: Path,
    how: str,
    says: str,
) -> None:
    middle = items[1][1].id
    env = {**proc.child_environment(os.environ), DIE_ENV: f"{how}:{middle}"}
    options = VerifyOptions(latency_runs=5, timeout_s=8)
    hooked_env = hooked(environment, tmp_path / "hooks")
    found = stage.verify_many(items, tmp_path, options, base_env=env, environment=hooked_env)
    statuses = {
        t.id: w.result.status.value
        for (_, t), w in zip(items, found, strict=True)
        if not isinstance(w, Exception)
    }
    assert statuses == {items[0][1].id: "passed", middle: "error", items[2][1].id: "passed"}
    dead = found[1]
    assert not isinstance(dead, Exception)
    assert says in dead.result.summary
    runner = next(c for c in dead.result.checks if c.name == "runner")
    assert runner.status.value == "error" and "the runner process failed" in runner.message
