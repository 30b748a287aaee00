"""The plan's CI layout: one verify job per environment, split by estimated work, calibrated on bench/."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from ci_onnx import config, matrix
from ci_onnx import plan as planning
from ci_onnx.contracts.errors import ConfigError
from ci_onnx.contracts.target import Target
from ci_onnx.orchestration import scaffold
from ci_onnx.plan import cijobs
from tests.conftest import EXAMPLE_CONFIG

ROOT = Path(__file__).resolve().parents[2]


class Index:
    def __init__(self, releases: dict[str, list[str]]) -> None:
        self.releases = releases

    def versions(self, package: str) -> list[str]:
        return self.releases.get(package, [])


INDEX = Index({"onnxruntime": ["1.20.1", "1.32.0"], "onnxruntime-openvino": ["1.24.1"]})


def _example(tmp_path: Path, ci: str = "") -> config.Config:
    here = EXAMPLE_CONFIG.parent
    text = EXAMPLE_CONFIG.read_text().replace("factory: model.py:build", f"factory: {here}/model.py:build")
    text = text.replace("samples: samples.npz", f"samples: {here}/samples.npz")
    path = tmp_path / "onnx-gate.yml"
    path.write_text(text + ci)
    return config.load(path)


def test_the_example_is_one_job_per_environment(tmp_path: Path) -> None:
    plan = planning.expand(_example(tmp_path), INDEX)
    jobs = cijobs.verify_jobs(plan)
    assert [v.name for v in jobs] == [
        "verify ort1.20.1 cpu · 4 targets",
        "verify ort1.24.1 openvino · 4 targets",
        "verify ort1.32.0 cpu · 4 targets",
    ]
    assert sorted(t.id for v in jobs for t in v.targets) == sorted(t.id for t in plan.runnable)
    entry = jobs[0].entry()
    assert entry["bundles"] == ["op17-dynamo", "op17-torchscript", "op18-dynamo", "op18-torchscript"]
    assert (
        entry["bundle-pattern"]
        == "onnx-gate-bundle-{op17-dynamo,op17-torchscript,op18-dynamo,op18-torchscript}"
    )
    assert entry["artifact"] == "onnx-gate-results-ort1.20.1-cpu-op17-dynamo"
    assert (entry["runtime"], entry["package"], entry["runs-on"]) == (
        "1.20.1",
        "onnxruntime",
        ["ubuntu-latest"],
    )


def test_the_plan_sees_the_weights_the_export_reads(tmp_path: Path) -> None:
    plan = planning.expand(_example(tmp_path), INDEX)
    weights = (EXAMPLE_CONFIG.parent / "weights.pt").stat().st_size / 1e6  # samples.npz is not weights
    assert plan.ci.bundle_mb == {k: pytest.approx(weights, abs=1e-3) for k in plan.bundle_keys()}
    assert plan.ci.batch_sizes == (1, 8, 32) and plan.ci.max_job_minutes == 10
    assert planning.read_plan(_written(tmp_path, plan)).ci == plan.ci, "the layout travels with the plan"


def _written(tmp_path: Path, plan: planning.Plan) -> Path:
    path = tmp_path / "plan.json"
    path.write_text(planning.to_json(plan))
    return path


def test_a_derived_precision_is_estimated_at_its_bytes_per_weight(tmp_path: Path) -> None:
    cfg = _example(tmp_path)
    cfg = dataclasses.replace(cfg, export=dataclasses.replace(cfg.export, precisions=("fp32", "fp16")))
    sizes = planning.expand(cfg, INDEX).ci.bundle_mb
    assert sizes["op17-dynamo-fp16"] == pytest.approx(sizes["op17-dynamo"] / 2, abs=1e-3)


def _cells(n: int, releases: int = 1) -> tuple[Target, ...]:
    return tuple(
        Target(
            f"1.{20 + r}.0", "cpu", 7 + i % 20, "dynamo", session_options=("default", "basic")[i // 20 % 2]
        )
        for r in range(releases)
        for i in range(n)
    )


def _plan(targets: tuple[Target, ...], **ci: object) -> planning.Plan:
    return planning.Plan(1, "c.yml", "m", targets, ci=cijobs.CiSettings(**ci))  # type: ignore[arg-type]


def test_a_group_is_split_when_its_estimated_work_exceeds_the_bound() -> None:
    targets = _cells(40)
    est = matrix.estimate()
    one = est.target_work_s(1000.0, planning.Plan(1, "c", "m", ()).verify.latency_runs, (1, 8))
    sizes = {t.bundle_key: 1000.0 for t in targets}
    plan = _plan(targets, bundle_mb=sizes, batch_sizes=(1, 8), max_job_minutes=10)
    reserve = cijobs.triage_reserve_s(targets[0], plan)
    assert 0 < reserve < 600, "the default triage budget fits a ten-minute job"
    jobs = cijobs.verify_jobs(plan)
    parts = -(-round(40 * one) // round(600 - reserve))
    assert len(jobs) == parts > 1, (one, len(jobs))
    assert all(v.estimate_s <= 600 * 1.1 for v in jobs), "a job's work and one triage fit its bound"
    assert all(v.estimate_s >= reserve for v in jobs)
    assert jobs[0].name == f"verify ort1.20.0 cpu · {len(jobs[0].targets)} targets (1/{parts})"
    assert sorted(t.id for v in jobs for t in v.targets) == sorted(t.id for t in targets)
    small = _plan(targets, bundle_mb={t.bundle_key: 0.07 for t in targets}, batch_sizes=(1, 8))
    assert len(cijobs.verify_jobs(small)) == 1, "40 small targets are one job's minute"


def test_max_cells_per_job_overrides_the_estimate() -> None:
    jobs = cijobs.verify_jobs(_plan(_cells(40), max_cells_per_job=16))
    assert [len(v.targets) for v in jobs] == [14, 13, 13]


def test_an_unseen_model_is_estimated_at_the_largest_bench_model() -> None:
    unseen = cijobs.estimate_s(Target("1.20.0", "cpu", 17, "dynamo"), _plan(()))
    est = matrix.estimate()
    assert unseen == est.target_work_s(est.unknown_mb, planning.Plan(1, "c", "m", ()).verify.latency_runs, ())


def test_environments_split_by_release_package_labels_and_api_level() -> None:
    targets = (
        Target("1.24.1", "cpu", 17, "dynamo"),
        Target("1.24.1", "cpu", 18, "dynamo"),
        Target("1.24.1", "openvino", 17, "dynamo"),  # another package
        Target("1.24.1", "coreml", 17, "dynamo"),  # macOS labels: the runner job
        Target("1.24.1", "xnnpack", 17, "dynamo"),  # onnxruntime on ubuntu-latest, but not in a container
        Target("1.24.1", "cpu", 17, "dynamo", runner="node"),
        Target("1.22.0", "cpu", 17, "dynamo", runner="android", api_level=34),
        Target("1.22.0", "cpu", 17, "dynamo", runner="android", api_level=30),
    )
    names = [(v.job, v.name) for v in cijobs.verify_jobs(_plan(targets))]
    assert names == [
        ("container", "verify ort1.24.1 cpu · 2 targets"),
        ("container", "verify ort1.24.1 openvino · 1 target"),
        ("runner", "verify ort1.24.1 coreml · 1 target"),
        ("runner", "verify ort1.24.1 xnnpack · 1 target"),
        ("node", "verify node-ort1.24.1 cpu · 1 target"),
        ("android", "verify android-api34-ort1.22.0 cpu · 1 target"),
        ("android", "verify android-api30-ort1.22.0 cpu · 1 target"),
    ]


def _bench_ms(text: str, case: str) -> float:
    found = re.search(rf"^\| {re.escape(case)} \| (\d+) ms \|", text, re.M)
    assert found, f"bench/ no longer has the row {case!r}: re-calibrate matrix/ci.toml"
    return float(found[1])


def test_the_estimate_is_calibrated_on_the_committed_bench_figures() -> None:
    """matrix/ci.toml names the bench rows its figures come from; a new bench run that moves them
    fails here until ci.toml follows."""
    batch = (ROOT / "bench" / "BATCH.md").read_text()
    results = (ROOT / "bench" / "RESULTS.md").read_text()
    est = matrix.estimate()
    four = _bench_ms(batch, "onnx-gate verify, one runner process")
    assert est.target_s == pytest.approx(four / 4 / 1000, abs=0.005)
    minilm = results.split("### all-MiniLM-L6-v2", 1)[1]
    verify_ms = _bench_ms(minilm, "onnx-gate verify")
    digitnet_ms = _bench_ms(results.split("### tinycnn", 1)[1], "onnx-gate verify")
    latency_ms = float(re.search(r"^\| latency \| [^|]+ \| (\d+) ms \|", minilm, re.M)[1])  # type: ignore[index]
    mb = est.unknown_mb
    assert est.load_s_per_mb == pytest.approx((verify_ms - digitnet_ms - latency_ms) / 1000 / mb, rel=0.02)
    samples = (20 + est.warmup_runs) * sum((1, 4))  # bench: 20 timed runs; MiniLM's batch sizes [1, 4]
    assert est.run_s_per_mb == pytest.approx(latency_ms / 1000 / mb / samples, rel=0.02)


def test_every_kind_names_a_declared_job_and_every_job_is_written(tmp_path: Path) -> None:
    jobs = matrix.jobs()
    assert {r.job for r in matrix.runners().values()} <= set(jobs)
    text = scaffold.workflow("pr-gate.yml.j2", scaffold.Settings(android=True))
    for job in jobs.values():
        for n in range(1, job.matrices + 1):
            assert f"\n  {job.job_id(n)}:\n" in text
            assert f"{job.output_name(n)}: ${{{{ steps.plan.outputs.{job.output_name(n)} }}}}" in text


def test_a_new_kind_with_its_own_job_is_a_table_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a kind declares is all the workflows need: its job, its set-up steps, its outputs."""
    quantum = matrix.JobInfo(
        name="quantum",
        verify="runner",
        timeout_minutes=12,
        setup=(matrix.Step(uses="actions/setup-python", with_={"python-version": "3.12"}, name="Python"),),
    )
    monkeypatch.setitem(matrix.jobs(), "quantum", quantum)
    monkeypatch.setitem(
        matrix.runners(), "qkind", dataclasses.replace(matrix.runners()["node"], name="qkind", job="quantum")
    )
    text = scaffold.workflow("pr-gate.yml.j2", scaffold.Settings())
    job = text.split("\n  verify-quantum:\n", 1)[1].split("\n\n", 1)[0]
    assert "timeout-minutes: 12" in job and "needs.plan.outputs.quantum-targets != '0'" in job
    assert f"- name: Python\n        uses: {scaffold.uses('actions/setup-python')}\n" in job
    assert 'python-version: "3.12"' in job and "uses: onnx-gate/onnx-gate/runner@v1" in job
    assert "verify-quantum]" in text.split("\n  report:\n", 1)[1]
    out = cijobs.github_outputs(_plan((Target("1.24.1", "cpu", 17, "dynamo", runner="qkind"),)))
    (entry,) = json.loads(out["matrix-quantum"])["include"]
    assert entry["name"] == "verify qkind-ort1.24.1 cpu · 1 target" and out["quantum-targets"] == "1"


def _bundles(
    opsets: int, exporters: tuple[str, ...] = ("dynamo", "torchscript"), mb: float = 0.07
) -> planning.Plan:
    targets = tuple(Target("1.32.0", "cpu", 7 + o, e) for o in range(opsets) for e in exporters)
    return _plan(targets, bundle_mb={t.bundle_key: mb for t in targets})


def test_the_example_exports_in_the_plan_job_and_uploads_each_bundle(tmp_path: Path) -> None:
    plan = planning.expand(_example(tmp_path), INDEX)
    layout = cijobs.export_layout(plan, cpus=2)
    assert layout.in_plan and layout.in_plan_s < layout.jobs_s, layout
    assert layout.export_jobs == ("op17-dynamo", "op17-torchscript", "op18-dynamo", "op18-torchscript")
    out = cijobs.github_outputs(plan, cpus=2)
    assert out["export-in-plan"] == "true" and out["export-bundles"] == "[]"
    assert out["export-only"] == "op17-dynamo,op17-torchscript,op18-dynamo,op18-torchscript"
    slots = [out[f"bundle-{n}"] for n in range(1, cijobs.PLAN_EXPORT_SLOTS + 1)]
    assert slots == [*layout.bundles, "", "", "", ""]
    assert layout.describe().startswith("  export 4 bundles in the plan job (about ")
    assert layout.describe().endswith(" s in one export job per bundle, on 2 CPUs)")


def test_exports_that_would_end_later_in_the_plan_job_get_jobs_of_their_own() -> None:
    est = matrix.estimate().export
    # one CPU: four exports of a 100 MB model one after another outlast an export job's set-up and one
    serial = cijobs.export_layout(_bundles(2, mb=100.0), cpus=1)
    assert not serial.in_plan and serial.in_plan_s == pytest.approx(
        4 * est.job_work_s(100.0) + 4 * est.upload_s
    )
    assert cijobs.export_layout(_bundles(2, mb=100.0), cpus=4).in_plan
    out = cijobs.github_outputs(_bundles(2, mb=100.0), cpus=1)
    assert out["export-in-plan"] == "false" and out["export-only"] == "" and out["bundle-1"] == ""
    assert json.loads(out["export-bundles"]) == list(serial.bundles)
    # more bundles than the plan job has upload steps for
    many = cijobs.export_layout(_bundles(5), cpus=16)
    assert not many.in_plan and "more than the plan job's 8 uploads" in many.why


def test_derived_precisions_come_with_their_fp32_export() -> None:
    targets = tuple(
        Target("1.32.0", "cpu", 18, "dynamo", precision=p) for p in ("fp32", "fp16", "int8-dynamic")
    )
    sizes = {"op18-dynamo": 91.0, "op18-dynamo-fp16": 45.5, "op18-dynamo-int8-dynamic": 22.75}
    layout = cijobs.export_layout(_plan(targets, bundle_mb=sizes), cpus=2)
    est = matrix.estimate().export
    assert layout.export_jobs == ("op18-dynamo",) and len(layout.bundles) == 3
    assert layout.in_plan_s == pytest.approx(est.job_work_s(91.0) + 3 * est.upload_s)
    assert layout.in_plan


def test_ci_export_overrides_the_estimate() -> None:
    assert not cijobs.export_layout(_plan(_bundles(1).targets, export="jobs"), cpus=16).in_plan
    forced = cijobs.export_layout(_plan(_bundles(2).targets, export="plan"), cpus=1)
    assert forced.in_plan and forced.why.startswith("ci.export: plan")
    with pytest.raises(ConfigError, match=r"ci\.export: plan: 10 bundles; the plan job exports at most 8"):
        cijobs.export_layout(_plan(_bundles(5).targets, export="plan"), cpus=1)


def test_the_plan_job_exports_behind_its_outputs_and_the_export_job_behind_its_own() -> None:
    jobs = YAML(typ="safe").load(scaffold.workflow("pr-gate.yml.j2", scaffold.Settings()))["jobs"]
    steps = jobs["plan"]["steps"]
    exports = [s for s in steps if s.get("with", {}).get("command") == "export"]
    assert [s["if"] for s in exports] == ["steps.plan.outputs.export-in-plan == 'true'"] * 2
    assert exports[1]["continue-on-error"] is True and "cache-key" not in exports[1]["with"]
    # the model's code runs in this job now: the token reaches the plan step alone
    assert [s["id"] for s in steps if "github-token" in s.get("with", {})] == ["plan"]
    assert not any("GITHUB_TOKEN" in str(s.get("env", "")) for s in steps)
    uploads = [s for s in steps if "bundle-" in s.get("if", "")]
    assert len(uploads) == cijobs.PLAN_EXPORT_SLOTS
    assert uploads[2]["if"] == "always() && steps.plan.outputs.bundle-3 != ''"
    assert uploads[2]["with"]["name"] == "onnx-gate-bundle-${{ steps.plan.outputs.bundle-3 }}"
    cache = next(s for s in steps if "actions/cache" in s.get("uses", ""))
    assert cache["with"]["restore-keys"] == "onnx-gate-export-plan-"
    assert jobs["export"]["if"] == "needs.plan.outputs.export-bundles != '[]'"
    # a commit's export cache has a slot of its own (a stale record's fresh entry must be saved),
    # restored from the newest of the same bundle
    saved = next(s for s in jobs["export"]["steps"] if "actions/cache" in s.get("uses", ""))
    assert saved["with"]["restore-keys"] == "onnx-gate-export-${{ matrix.bundle }}-"
    assert (
        jobs["export"]["strategy"]["matrix"]["bundle"] == "${{ fromJSON(needs.plan.outputs.export-bundles) }}"
    )


def test_the_export_estimate_is_calibrated_on_the_committed_bench_figures() -> None:
    """matrix/ci.toml's [estimate.export] comes from bench/PIPELINE.md's rows it names."""
    text = (ROOT / "bench" / "PIPELINE.md").read_text()
    est = matrix.estimate().export
    digitnet = re.search(
        r"^\| DigitNet \(the example\) \| ([\d.]+) s .*\| [\d.]+ s side by side, [\d.]+ s one after another "
        r"\(4 export jobs: ([\d.]+) s each, parallel efficiency ([\d.]+) on 2 CPUs\) \|$",
        text,
        re.M,
    )
    minilm = re.search(r"^\| all-MiniLM-L6-v2 \| ([\d.]+) s .*\| ([\d.]+) MB \|", text, re.M)
    size = re.search(r"^\| DigitNet \(the example\) \|.*\| ([\d.]+) MB \|", text, re.M)
    assert digitnet and minilm and size, (
        "bench/PIPELINE.md no longer has the rows: re-calibrate matrix/ci.toml"
    )
    assert est.job_s == pytest.approx(float(digitnet[2]), abs=0.05)
    assert est.parallel_efficiency == pytest.approx(float(digitnet[3]), abs=0.005)
    per_mb = (float(minilm[1]) - float(digitnet[1])) / (float(minilm[2]) - float(size[1]))
    assert est.s_per_mb == pytest.approx(per_mb, rel=0.02)
    setup = re.search(r"Design `slim`.*?^\| export \| \d+ MB \| (\d+) s \|", text, re.M | re.S)
    assert setup and est.job_setup_s == pytest.approx(float(setup[1]), abs=0.5)
