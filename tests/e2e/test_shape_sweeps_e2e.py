"""Shape sweeps and fixed shapes end to end: models of tests/e2e/pitfalls/shapes.py exported by the gate,
verified on onnxruntime 1.32.0 by the python runner, reported with their charts; the Mermaid blocks
parsed by Mermaid itself (npm's ``mermaid`` under Node, with jsdom for its DOM)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from export_helpers import failed, manifest, run_export, write_config

from ci_onnx.cli import cli
from ci_onnx.host import envs

pytestmark = pytest.mark.e2e

SHAPES = Path(__file__).parent / "pitfalls" / "shapes.py"
ORT = "1.32.0"
MERMAID, JSDOM = "11.17.2", "26.1.0"
SEQ = """\
  inputs: {x: {shape: [batch, seq, DIM]}}
  outputs: [y]
  dynamic_axes: {x: {0: batch, 1: seq}, y: {0: batch, 1: seq}}
  dim_sizes: {seq: LENGTH}"""


@pytest.fixture(scope="module")
def python(env_cache: Path) -> str:
    """The target's own environment (numpy and onnxruntime 1.32.0 only), as `onnx-gate run` makes it."""
    return str(envs.ensure("onnxruntime", ORT, env_cache, uv=envs.find_uv()).python)


def exported(tmp: Path, factory: str, model: str, exporter: str, verify: str = "") -> Path:
    tmp.mkdir(parents=True, exist_ok=True)
    cfg = write_config(
        tmp,
        f"model:\n  factory: {SHAPES}:{factory}\n{model}\nexport: {{opsets: [18], exporters: [{exporter}]}}\n"
        f"verify: {{random_inputs: 4{verify}}}\ntargets: {{runtimes: ['{ORT}']}}\n",
    )
    done = run_export(cfg, tmp / "bundles")
    assert (tmp / "bundles" / f"op18-{exporter}" / "manifest.json").is_file(), done.output
    return cfg


def verified(cfg: Path, bundle: str, python: str) -> dict[str, Any]:
    target = f"ort{ORT}-cpu-{bundle}"
    args = ["verify", "--bundle", str(cfg.parent / "bundles" / bundle), "--target", target,
            "--config", str(cfg), "--out", str(cfg.parent / "out"), "--python", python]  # fmt: skip
    res = CliRunner().invoke(cli, args)
    path = cfg.parent / "out" / "results" / f"{target}.json"
    assert path.is_file(), res.output
    return dict(json.loads(path.read_text()))


def by_name(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in result["checks"]}


@pytest.mark.parametrize(("written", "eight"), [(", batch_sizes: [1, 8]", "failed"), ("", "skipped")])
def test_a_fixed_shape_model_is_timed_at_its_size_and_a_written_size_it_cannot_take_fails(
    tmp_path: Path, python: str, written: str, eight: str
) -> None:
    model = "  inputs: {x: {shape: [1, 16]}}\n  outputs: [y]"
    cfg = exported(tmp_path, "row", model, "dynamo", written)
    checks = by_name(verified(cfg, "op18-dynamo", python))
    assert checks["batch[1]"]["status"] == "passed", checks["batch[1]"]
    assert "the model's fixed size" in checks["batch[1]"]["message"]
    assert checks["batch[8]"]["status"] == eight, checks["batch[8]"]
    assert "the batch axis of input 'x' is fixed at 1 in the model" in checks["batch[8]"]["message"]
    if eight == "failed":
        assert "declare dynamic_axes for input 'x'" in checks["batch[8]"]["message"]
    assert checks["latency"]["status"] == "passed" and checks["latency"]["message"].startswith("batch 1: p50")
    assert checks["memory"]["status"] == "passed"


def onnx_only(tmp: Path, source: Path, length: int) -> Path:
    """The exported file taken as a model exported elsewhere: no torch, no export-time probes."""
    tmp.mkdir(parents=True)
    shutil.copyfile(source, tmp / "model.onnx")
    cfg = write_config(
        tmp,
        f"model: {{onnx: model.onnx, dim_sizes: {{seq: {length}}}}}\nverify: {{random_inputs: 4}}\n"
        f"targets: {{runtimes: ['{ORT}']}}\n",
    )
    done = run_export(cfg, tmp / "bundles")
    assert done.exit_code == 0, done.output
    return cfg


def test_a_reshape_that_bakes_the_length_fails_at_every_other_length_naming_it(
    tmp_path: Path, python: str
) -> None:
    cfg = exported(
        tmp_path / "torch", "baked_reshape", SEQ.replace("DIM", "8").replace("LENGTH", "8"), "torchscript"
    )
    fails = failed(manifest(cfg.parent / "bundles" / "op18-torchscript"))
    # the export's probe convicts it (issue 25): every target fails for that one reason
    assert "dynamic-axes" in fails and "seq = 1" in fails["dynamic-axes"], fails
    assert "Reshape" in fails["dynamic-axes"], fails["dynamic-axes"]
    # the same file from elsewhere (no torch, no probe): each target's sweep says where and why
    other = onnx_only(tmp_path / "elsewhere", cfg.parent / "bundles" / "op18-torchscript" / "model.onnx", 8)
    checks = by_name(verified(other, "op18-onnx", python))
    swept = {n: c for n, c in checks.items() if n.startswith("sweep[")}
    assert list(swept) == ["sweep[seq=1]", "sweep[seq=5]", "sweep[seq=8]", "sweep[seq=16]"]
    assert swept["sweep[seq=8]"]["status"] == "passed"
    for n in (1, 5):  # the Reshape refuses them: its message names the node
        c = swept[f"sweep[seq={n}]"]
        assert c["status"] == "failed", c
        assert f"does not run at seq = {n} (exported at seq = 8)" in c["message"]
        assert "Reshape" in c["message"], c["message"]
    # 16 × 8 divides by the baked 8 × 8: it runs, and contradicts the graph's own declared shape
    c = swept["sweep[seq=16]"]
    assert c["status"] == "failed" and "but its axis 1 is declared seq (= 16 here)" in c["message"], c


def test_a_length_traced_at_1_specialises_and_fails_at_every_other_length(
    tmp_path: Path, python: str
) -> None:
    cfg = exported(
        tmp_path, "sliced_positions", SEQ.replace("DIM", "8").replace("LENGTH", "1"), "torchscript"
    )
    m = manifest(cfg.parent / "bundles" / "op18-torchscript")
    fails = failed(m)
    assert "dynamic-axes" in fails and "exported at seq = 1" in fails["dynamic-axes"], fails
    probed = next(f for f in m.findings if f.name == "dynamic-axes").figures["sweep"]["seq"]["results"]
    assert probed["1"] == "the export size" and all(probed[n].startswith("diverges") for n in ("2", "3")), (
        probed
    )
    assert [p.size for p in m.sweep_sets] == [1, 2, 3]  # the same sizes, timed on every target


def test_a_healthy_encoder_passes_at_every_point_and_the_report_draws_it(
    tmp_path: Path, python: str, env_cache: Path
) -> None:
    cfg = exported(
        tmp_path,
        "encoder",
        SEQ.replace("DIM", "16").replace("LENGTH", "8"),
        "dynamo",
        ", batch_sizes: [1, 4], sweeps: {seq: [1, 7, 8, 64]}",
    )
    result = verified(cfg, "op18-dynamo", python)
    swept = {n: c for n, c in by_name(result).items() if n.startswith("sweep[")}
    assert list(swept) == ["sweep[seq=1]", "sweep[seq=7]", "sweep[seq=8]", "sweep[seq=64]"]
    assert all(c["status"] == "passed" for c in swept.values()), swept
    assert result["status"] == "passed", result["summary"]
    assert [s["point"] for s in result["observation"]["sweep_latency"]] == [
        "seq=1",
        "seq=7",
        "seq=8",
        "seq=64",
    ]
    out = cfg.parent / "out"
    res = CliRunner().invoke(cli, ["report", "--results", str(out / "results"), "--out", str(out)])
    assert res.exit_code == 0, res.output
    text = (out / "report.md").read_text()
    assert text.count("```mermaid") == 4
    assert sorted(p.name for p in out.glob("chart-*.svg")) == [
        "chart-latency-by-batch.svg", "chart-latency-by-seq.svg",
        "chart-throughput-by-batch.svg", "chart-throughput-by-seq.svg",
    ]  # fmt: skip
    assert blocks_parse(text, env_cache) == 4


@pytest.mark.parametrize(
    ("runner", "release", "provider"),
    [
        ("node", "1.24.1", "cpu"),
        pytest.param("web", "1.29.0", "wasm", marks=pytest.mark.browser),
        ("native", "1.29.0", "cpu"),
    ],
)
def test_the_node_web_and_native_runners_run_the_sweep_points_too(
    tmp_path: Path, env_cache: Path, runner: str, release: str, provider: str
) -> None:
    """The other kinds read the same bundle (sweep_sets beside test_data_sets) and run every point."""
    cfg = exported(tmp_path, "encoder", SEQ.replace("DIM", "16").replace("LENGTH", "8"), "dynamo")
    cfg.write_text(
        cfg.read_text().replace(
            f"targets: {{runtimes: ['{ORT}']}}",
            f"targets: {{runtimes: ['{release}'], providers: [{provider}], runners: [{runner}]}}",
        )
    )
    out = tmp_path / "run"
    res = CliRunner().invoke(
        cli, ["run", "--config", str(cfg), "--out", str(out), "--cache-dir", str(env_cache)]
    )
    assert res.exit_code == 0, res.output
    result = json.loads((out / "results" / f"{runner}-ort{release}-{provider}-op18-dynamo.json").read_text())
    swept = {n: c for n, c in by_name(result).items() if n.startswith("sweep[")}
    assert list(swept) == ["sweep[seq=1]", "sweep[seq=5]", "sweep[seq=8]", "sweep[seq=16]"]
    assert all(c["status"] == "passed" for c in swept.values()), swept
    assert [s["point"] for s in result["observation"]["sweep_latency"]] == [
        "seq=1",
        "seq=5",
        "seq=8",
        "seq=16",
    ]


def blocks_parse(markdown: str, cache: Path) -> int:
    """Parse every ```mermaid block with Mermaid's own parser (installed under ``cache``); the number
    parsed (AssertionError on the first that does not)."""
    from ci_onnx.runners import npm

    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed: Mermaid's parser runs under Node")
    module = npm.install(
        cache / "npm" / f"mermaid-{MERMAID}-jsdom-{JSDOM}",
        "mermaid",
        MERMAID,
        npm=shutil.which("npm") or "npm",
        environ=dict(os.environ),
        what="the test's Mermaid parser",
        extra=(f"jsdom@{JSDOM}",),
    )
    blocks = markdown.split("```mermaid\n")[1:]
    texts = [b.split("\n```", 1)[0] for b in blocks]
    blocks_file = root_of(module) / "blocks.json"
    blocks_file.write_text(json.dumps(texts))
    root = root_of(module)  # ESM resolves 'mermaid' from the script's own folder
    shutil.copyfile(Path(__file__).parent / "mermaid_parse.mjs", root / "mermaid_parse.mjs")
    done = subprocess.run(
        [node, str(root / "mermaid_parse.mjs"), str(blocks_file)],
        capture_output=True, text=True, timeout=120, cwd=root, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    parsed = json.loads(done.stdout)
    assert all(p == "xychart" for p in parsed), parsed
    return len(parsed)


def root_of(module: Path) -> Path:
    return module.parent.parent


def test_the_mermaid_parser_refuses_a_broken_block(env_cache: Path) -> None:
    """The parse is a real check: a block with an unclosed string fails it."""
    with pytest.raises(AssertionError, match="Parse error"):
        blocks_parse('```mermaid\nxychart-beta\n  title "open\n  line [1, 2]\n```\n', env_cache)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
