"""`onnx-gate verify` with several targets, as one CI verify job runs its matrix entry: one runner
process for the environment, each target its own result and JUnit, a crash only its own target's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ci_onnx.cli import cli
from ci_onnx.contracts.bundle import MODEL, read_manifest
from tests import bundles
from tests.support.cells import DIE_ENV, python_kind_hooked

PLAIN = "ort1.32.0-cpu-op17-onnx"
BASIC = "ort1.32.0-cpu-op17-onnx-so-basic"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of bundles as download-artifact lays several out: onnx-gate-bundle-<key>/."""
    folder = tmp_path_factory.mktemp("bundles")
    bundles.mlp_bundle(folder / "onnx-gate-bundle-op17-onnx")
    return folder


def _verify(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["verify", *args])
    return result.exit_code, result.output


def _statuses(out: Path) -> dict[str, str]:
    return {p.stem: json.loads(p.read_text())["status"] for p in (out / "results").glob("*.json")}


def test_several_targets_each_write_their_own_result_and_junit(tmp_path: Path, root: Path) -> None:
    code, output = _verify("--bundles", str(root), "--target", f"{PLAIN},{BASIC}", "--out", str(tmp_path))
    assert code == 0, output
    assert _statuses(tmp_path) == {PLAIN: "passed", BASIC: "passed"}
    assert {p.stem for p in (tmp_path / "junit").glob("*.xml")} == {PLAIN, BASIC}
    result = json.loads((tmp_path / "results" / f"{BASIC}.json").read_text())
    assert (
        result["reproduce"]
        == f"onnx-gate verify --bundle {root / 'onnx-gate-bundle-op17-onnx'} --target {BASIC}"
    )


def test_a_crash_is_its_own_targets_error_and_the_rest_report(
    tmp_path: Path, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DIE_ENV, "SIGSEGV:*-so-basic")
    python_kind_hooked(tmp_path / "hooks", monkeypatch.setattr)
    code, output = _verify(
        "--bundles", str(root), "--target", BASIC, "--target", PLAIN, "--jobs", "1", "--out", str(tmp_path)
    )
    assert code == 1, output
    assert _statuses(tmp_path) == {PLAIN: "passed", BASIC: "error"}
    crashed = json.loads((tmp_path / "results" / f"{BASIC}.json").read_text())
    assert "SIGSEGV" in crashed["summary"], crashed["summary"]


def test_a_target_whose_bundle_is_missing_is_an_error_result_naming_it(tmp_path: Path, root: Path) -> None:
    missing = "ort1.32.0-cpu-op18-onnx"
    code, output = _verify("--bundles", str(root), "--target", f"{PLAIN},{missing}", "--out", str(tmp_path))
    assert code == 1, output
    assert _statuses(tmp_path) == {PLAIN: "passed", missing: "error"}
    result = json.loads((tmp_path / "results" / f"{missing}.json").read_text())
    assert "onnx-gate-bundle-op18-onnx: no such bundle directory" in result["summary"], result["summary"]
    assert f"{missing}: error (" in output


def test_one_target_keeps_its_one_line_error_and_writes_nothing(tmp_path: Path, root: Path) -> None:
    code, output = _verify(
        "--bundles", str(root), "--target", "ort1.32.0-cpu-op18-onnx", "--out", str(tmp_path / "o")
    )
    assert code == 2 and "no such bundle directory" in output
    assert not (tmp_path / "o").exists()


def test_bundle_and_bundles_are_one_or_the_other(tmp_path: Path, root: Path) -> None:
    code, output = _verify("--target", PLAIN, "--out", str(tmp_path))
    assert code == 2 and "pass --bundle DIR" in output
    both = ("--bundle", str(root), "--bundles", str(root))
    code, output = _verify(*both, "--target", PLAIN, "--out", str(tmp_path))
    assert code == 2 and "pass --bundle DIR" in output


def test_baseline_pairs_every_target_with_its_own_base_bundle(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """A job's targets of several bundles: --baseline DIR times each beside the base's bundle of its
    own key (the PR gate's grouped verify job passes `github`, which fetches each bundle once)."""
    head, base = tmp_path_factory.mktemp("head"), tmp_path_factory.mktemp("base")
    op18 = "ort1.32.0-cpu-op18-onnx"
    for opset in (17, 18):
        bundles.mlp_bundle(head / f"onnx-gate-bundle-op{opset}-onnx", opset=opset)
        bundles.mlp_bundle(base / f"op{opset}-onnx", opset=opset, doc="the base's")
    code, output = _verify(
        "--bundles", str(head), "--target", f"{PLAIN},{op18}", "--baseline", str(base), "--out", str(tmp_path)
    )
    assert code == 0, output
    for target, key in ((PLAIN, "op17-onnx"), (op18, "op18-onnx")):
        paired = json.loads((tmp_path / "results" / f"{target}.json").read_text())["observation"]["paired"]
        # the base bundle it was timed beside, named by its model's sha256 as its manifest lists it
        assert paired["base_bundle"] == read_manifest(base / key).files[MODEL], (target, paired)
