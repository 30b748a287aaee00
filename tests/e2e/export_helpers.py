"""Helpers of the export stage's end-to-end tests: write a config, run `onnx-gate export`, read bundles."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from ci_onnx.bundle import Manifest, read_manifest
from ci_onnx.cli import cli

PITFALLS = Path(__file__).parent / "pitfalls" / "models.py"


def write_config(directory: Path, body: str) -> Path:
    path = directory / "onnx-gate.yml"
    path.write_text("version: 1\n" + textwrap.dedent(body))
    return path


def run_export(config: Path, out: Path, *extra: str) -> Result:
    return CliRunner().invoke(cli, ["export", "--config", str(config), "--out", str(out), *extra])


def manifest(bundle: Path) -> Manifest:
    return read_manifest(bundle)


def failed(m: Manifest) -> dict[str, str]:
    return {f.name: f.message for f in m.findings if f.status.failing}


def raw(bundle: Path) -> Any:
    return json.loads((bundle / "manifest.json").read_text())
