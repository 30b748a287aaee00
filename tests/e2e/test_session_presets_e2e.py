"""Session-options presets and the optimized-model cache on a real onnxruntime (DigitNet, CPU).

`onnx-gate verify --python ENV` puts the cache under ENV (``onnx-gate-optimized``), keyed on the
release, providers, session options and the model's sha256; each test removes the entries it made.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import onnx
import pytest
from click.testing import CliRunner

from ci_onnx.cli import cli
from ci_onnx.host import envs
from ci_onnx.observer.optcache import FILE
from tests import bundles

pytestmark = pytest.mark.e2e

ORT = "1.32.0"
EXAMPLES = Path(__file__).parents[2] / "examples" / "tinycnn"
TARGET = f"ort{ORT}-cpu-op17-torchscript"


@pytest.fixture(scope="module")
def python(env_cache: Path) -> str:
    return str(envs.ensure("onnxruntime", ORT, env_cache, uv=envs.find_uv()).python)


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return bundles.digitnet_bundle(tmp_path_factory.mktemp("bundles") / "digitnet", EXAMPLES)


def verify(bundle: Path, target: str, out: Path, python: str) -> tuple[int, dict[str, Any], dict[str, Any]]:
    args = ["verify", "--bundle", str(bundle), "--target", target, "--out", str(out), "--python", python]
    result = CliRunner().invoke(cli, args)
    path = out / "results" / f"{target}.json"
    assert path.is_file(), result.output
    record = next(out.rglob(FILE), None)
    assert record is not None, "the python runner wrote no optcache.json"
    return result.exit_code, json.loads(path.read_text()), json.loads(record.read_text())


def cache_check(data: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in data["checks"] if c["name"] == "optimized-cache")


def test_the_cache_is_written_once_then_loaded_and_checked_against_the_original(
    bundle: Path, python: str, tmp_path: Path
) -> None:
    _, _, first = verify(bundle, TARGET, tmp_path / "0", python)
    entry = Path(first["path"])
    shutil.rmtree(entry.parent)  # start from a cold cache
    try:
        code, data, record = verify(bundle, TARGET, tmp_path / "1", python)
        check = cache_check(data)
        assert code == 0 and check["status"] == "passed", check
        assert record["state"] == "written" and entry.is_file() and "written now" in check["message"]
        assert check["figures"]["create_ms_original"] > 0 and check["figures"]["create_ms_cached"] > 0
        assert "bit-identical" in check["message"] and "session creation" in check["message"]

        _, data, record = verify(bundle, TARGET, tmp_path / "2", python)
        assert record["state"] == "hit" and record["key"] == first["key"], record
        assert (
            cache_check(data)["status"] == "passed"
            and "loaded from the cache" in cache_check(data)["message"]
        )

        # an entry that is not this model's optimized graph (here: a model with one logit perturbed)
        stale = onnx.load(str(entry))
        final = next(n for n in reversed(stale.graph.node) if n.op_type in ("Gemm", "MatMul", "Add"))
        bias = next(i for i in stale.graph.initializer if i.name in final.input and len(i.dims) == 1)
        values = onnx.numpy_helper.to_array(bias).copy()
        values[0] += 5.0
        bias.CopyFrom(onnx.numpy_helper.from_array(values, bias.name))
        onnx.save(stale, str(entry))
        code, data, record = verify(bundle, TARGET, tmp_path / "3", python)
        check = cache_check(data)
        assert record["state"] == "hit" and check["status"] == "failed", check
        assert "differs from the original session's" in check["message"] and code == 1
    finally:
        shutil.rmtree(entry.parent, ignore_errors=True)


def test_a_preset_reaches_the_session_and_has_its_own_cache_entry(
    bundle: Path, python: str, tmp_path: Path
) -> None:
    code, data, default = verify(bundle, TARGET, tmp_path / "default", python)
    code_no_opt, no_opt_data, no_opt = verify(bundle, f"{TARGET}-so-no_opt", tmp_path / "no_opt", python)
    try:
        assert code == code_no_opt == 0, (data["summary"], no_opt_data["summary"])
        assert no_opt_data["target"]["session_options"] == "no_opt"
        assert default["key"] != no_opt["key"]
        # the runtime's default optimizes (fuses Conv + BatchNorm + Relu); no_opt leaves the graph alone
        nodes = {
            name: len(onnx.load(r["path"]).graph.node) for name, r in (("all", default), ("none", no_opt))
        }
        assert nodes["none"] == len(onnx.load(str(bundle / "model.onnx")).graph.node) > nodes["all"], nodes
    finally:
        for r in (default, no_opt):
            shutil.rmtree(Path(r["path"]).parent, ignore_errors=True)
