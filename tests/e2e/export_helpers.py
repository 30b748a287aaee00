"""Helpers of the export stage's end-to-end tests: write a config, run `onnx-gate export`, read bundles."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from ci_onnx.cli import cli
from ci_onnx.contracts.bundle import Manifest, read_manifest

PITFALLS = Path(__file__).parent / "pitfalls" / "models.py"


def write_config(directory: Path, body: str) -> Path:
    path = directory / "onnx-gate.yml"
    path.write_text("version: 1\n" + textwrap.dedent(body))
    return path


def run_export(config: Path, out: Path, *extra: str) -> Result:
    return CliRunner().invoke(cli, ["export", "--config", str(config), "--out", str(out), *extra])


def export_factory(tmp_path: Path, factory: str, model: str, exporter: str, opset: int = 18) -> Manifest:
    """The bundle of ``factory`` (``file.py:name``) exported at ``opset`` by ``exporter``; ``model``: the
    rest of the model section, indented."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    cfg = write_config(
        tmp_path,
        f"model:\n  factory: {factory}\n{model}\n"
        f"export: {{opsets: [{opset}], exporters: [{exporter}]}}\n"
        "verify: {random_inputs: 4, batch_sizes: [1, 4]}\n",
    )
    out = tmp_path / "bundles"
    run_export(cfg, out)
    return manifest(out / f"op{opset}-{exporter}")


def manifest(bundle: Path) -> Manifest:
    return read_manifest(bundle)


def failed(m: Manifest) -> dict[str, str]:
    return {f.name: f.message for f in m.findings if f.status.failing}


def raw(bundle: Path) -> Any:
    return json.loads((bundle / "manifest.json").read_text())
