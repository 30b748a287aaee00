"""`onnx-gate verify` on bad input: one line and exit 2; an export that failed upstream is a result."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from ci_onnx.cli import cli
from ci_onnx.contracts import bundle, schema
from ci_onnx.contracts.results import CheckResult
from ci_onnx.contracts.target import Status
from tests import bundles

TARGET = "ort1.32.0-cpu-op17-onnx"


def verify(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["verify", *args])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def mlp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return bundles.mlp_bundle(tmp_path_factory.mktemp("b") / "mlp")


def _one_line_error(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("onnx-gate: error: ")
    return lines[0]


def test_missing_bundle(tmp_path: Path) -> None:
    code, _, err = verify("--bundle", str(tmp_path / "nope"), "--target", TARGET, "--out", str(tmp_path))
    assert code == 2 and "no such bundle directory" in _one_line_error(err)


def test_corrupted_bundle_names_the_file(tmp_path: Path, mlp: Path) -> None:
    import shutil

    broken = tmp_path / "broken"
    shutil.copytree(mlp, broken)
    pb = broken / "test_data_set_0" / "output_0.pb"
    pb.write_bytes(pb.read_bytes()[:-1] + b"\x00")
    code, _, err = verify("--bundle", str(broken), "--target", TARGET, "--out", str(tmp_path / "o"))
    line = _one_line_error(err)
    assert code == 2 and "test_data_set_0/output_0.pb" in line and "sha256" in line
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    ("target", "says"),
    [
        ("onnxruntime-latest", "is not of the form"),
        ("ort1.32.0-quantum-op17-onnx", "unknown provider 'quantum'"),
        ("ort1.32.0-cpu-op18-onnx", "verifies bundle op18-onnx"),
    ],
)
def test_bad_target_ids(tmp_path: Path, mlp: Path, target: str, says: str) -> None:
    code, _, err = verify("--bundle", str(mlp), "--target", target, "--out", str(tmp_path))
    assert code == 2 and says in _one_line_error(err)


def test_export_failed_upstream_is_a_failed_result(tmp_path: Path, mlp: Path) -> None:
    import shutil

    failed = tmp_path / "failed"
    shutil.copytree(mlp, failed)
    (failed / bundle.MODEL).unlink()
    manifest = bundle.read_manifest(failed, verify_hashes=False)
    reason = "GuardOnDataDependentSymNode: control flow on a tensor value"
    manifest = dataclasses.replace(
        manifest,
        files=bundle.hash_files(failed),
        findings=(
            CheckResult("export", Status.FAILED, reason),
            CheckResult("checker", Status.SKIPPED, "no model"),
        ),
    )
    bundle.write_manifest(failed, manifest)
    code, out, _ = verify(
        "--bundle", str(failed), "--target", TARGET, "--out", str(tmp_path / "o"), "--python", sys.executable
    )
    assert code == 1 and "export failed upstream" in out
    data = json.loads((tmp_path / "o" / "results" / f"{TARGET}.json").read_text())
    jsonschema.validate(data, schema.load_schema("target-result.schema.json"))
    assert data["status"] == "failed"
    assert data["summary"] == f"export failed upstream: export: {reason}"
    assert [c["name"] for c in data["checks"]] == ["export", "checker"]
    assert (tmp_path / "o" / "junit" / f"{TARGET}.xml").is_file()


def test_missing_python(tmp_path: Path, mlp: Path) -> None:
    code, _, err = verify(
        "--bundle", str(mlp), "--target", TARGET, "--out", str(tmp_path), "--python", str(tmp_path / "py")
    )
    assert code == 2 and "--python" in _one_line_error(err)


@pytest.mark.parametrize(
    ("script", "says"),
    [
        ("exit 0", "the runner wrote no observation.json"),
        (
            "echo \"ModuleNotFoundError: No module named 'onnxruntime'\" >&2; exit 1",
            "No module named 'onnxruntime'",
        ),
        ("kill -ABRT $$", "killed by SIGABRT"),
    ],
)
def test_a_runner_that_fails_is_an_error_result(tmp_path: Path, mlp: Path, script: str, says: str) -> None:
    fake = tmp_path / "python"
    fake.write_text(f"#!/bin/sh\n{script}\n")
    fake.chmod(0o755)
    out = tmp_path / "o"
    code, stdout, _ = verify(
        "--bundle", str(mlp), "--target", TARGET, "--out", str(out), "--python", str(fake)
    )
    assert code == 1 and says in stdout
    data = json.loads((out / "results" / f"{TARGET}.json").read_text())
    assert data["status"] == "error" and says in data["summary"]
    assert [c["name"] for c in data["checks"]] == ["export", "runner"]
    assert (out / "junit" / f"{TARGET}.xml").is_file()
