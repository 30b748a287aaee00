"""The export cache: what changes a bundle's key and what does not, and that a bad entry is never used."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from ci_onnx import config
from ci_onnx.config import Config
from ci_onnx.contracts.bundle import MANIFEST, MODEL, read_manifest
from ci_onnx.contracts.results import CheckResult
from ci_onnx.contracts.target import Status
from ci_onnx.export import cache, cache_key, record, writer
from ci_onnx.export.parent import Job, Outcome

CONFIG = """\
version: 1
model:
  name: tiny
  factory: model.py:build    # a comment
  inputs: {x: {shape: [batch, 4]}}
  outputs: [y]
  dynamic_axes: {x: {0: batch}, y: {0: batch}}
  samples: samples.npz
export: {opsets: [17, 18], exporters: [dynamo], precisions: [fp32, fp16], timeout_s: 300}
verify: {random_inputs: 4, seed: 0, batch_sizes: [1, 8], timeout_s: 60}
targets: {runtimes: ["1.20.1"], providers: [cpu]}
"""
JOB = Job(17, "dynamo")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "model.py").write_text("def build():\n    return None\n")
    (tmp_path / "layers.py").write_text("SCALE = 1\n")
    (tmp_path / "weights.pt").write_bytes(b"\x00weights-1")
    (tmp_path / "samples.npz").write_bytes(b"samples-1")
    (tmp_path / "onnx-gate.yml").write_text(CONFIG)
    return tmp_path


def load(project: Path, text: str = CONFIG) -> Config:
    path = project / "onnx-gate.yml"
    path.write_text(text)
    return config.load(path)


def key(project: Path, text: str = CONFIG, job: Job = JOB, exclude: Sequence[Path] = ()) -> str:
    return cache_key.key_for(load(project, text), job, exclude=exclude).digest


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("shape: [batch, 4]", "shape: [batch, 5]"),
        ("name: tiny", "name: other"),
        ("precisions: [fp32, fp16]", "precisions: [fp32, int8-dynamic]"),
        ("seed: 0", "seed: 1"),
        ("random_inputs: 4", "random_inputs: 5"),
        ("batch_sizes: [1, 8]", "batch_sizes: [1, 4]"),
        ("timeout_s: 60}", "timeout_s: 60, tolerance: {atol: 1.0e-3}}"),
    ],
)
def test_a_setting_that_shapes_the_bundle_changes_the_key(project: Path, old: str, new: str) -> None:
    assert CONFIG.count(old) == 1
    assert key(project) != key(project, CONFIG.replace(old, new))


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ('runtimes: ["1.20.1"]', 'runtimes: ["1.20.1", "1.32.0"]'),
        ("opsets: [17, 18]", "opsets: [17]"),  # the job names its own opset
        ("timeout_s: 300", "timeout_s: 900"),
        ("timeout_s: 60}", "timeout_s: 90, latency_runs: 5, strict_fallback: true}"),
        ("# a comment", "# another comment"),
        ("providers: [cpu]}", "providers: [cpu]}\nbudgets: {cold_start_ms: 500, p99_ms: 3}"),
        ("opsets: [17, 18], exporters: [dynamo]", "opsets: [17, 18], exporters: [dynamo], cache: true"),
    ],
)
def test_what_never_reaches_a_bundle_leaves_the_key_alone(project: Path, old: str, new: str) -> None:
    assert CONFIG.count(old) == 1
    assert key(project) == key(project, CONFIG.replace(old, new))


def test_the_job_the_named_files_and_the_versions_are_in_the_key(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = key(project)
    assert key(project, job=Job(18, "dynamo")) != base
    assert key(project, job=Job(17, "torchscript")) != base
    (project / "samples.npz").write_bytes(b"samples-2")
    assert key(project) != base
    (project / "samples.npz").write_bytes(b"samples-1")
    assert key(project) == base
    real = cache_key._version
    monkeypatch.setattr(cache_key, "_version", lambda p: "9.9" if p == "onnxscript" else real(p))
    assert key(project) != base


def test_outputs_hidden_dirs_and_bundles_next_to_the_factory_leave_the_key_alone(project: Path) -> None:
    base = key(project, exclude=[project / "out"])
    (project / "out").mkdir()
    (project / "out" / "results.json").write_text("{}")
    (project / ".git").mkdir()
    (project / ".git" / "x.py").write_text("x")
    (project / "bundles" / "op17-dynamo").mkdir(parents=True)
    (project / "bundles" / "op17-dynamo" / MANIFEST).write_text("{}")
    (project / "bundles" / "op17-dynamo" / "weights.bin").write_bytes(b"stale")
    (project / "notes.md").write_text("not read by an export")
    (project / "earlier-run" / "results").mkdir(parents=True)  # another --out of an earlier run
    (project / "earlier-run" / "plan.json").write_text("{}")
    (project / "earlier-run" / "results" / "t.json").write_text("{}")
    assert key(project, exclude=[project / "out"]) == base


# -- entries: a fake export writes real bundles (manifest with hashes) without torch ----------------


READ = ("model.py", "layers.py", "weights.pt")
"""What the fake export reads, as the export child would record it."""


class FakeExport:
    def __init__(self, figures: dict[str, object] | None = None, reads: Sequence[str] = READ) -> None:
        self.calls: list[list[str]] = []
        self.figures = {"seconds": 0.1} if figures is None else figures
        self.generation = 0
        self.reads = reads

    def __call__(self, cfg: Config, jobs: Sequence[Job], out: Path, log: cache.Log) -> list[Outcome]:
        self.calls.append([j.key for j in jobs])
        self.generation += 1
        outcomes = []
        figures = dict(self.figures)
        if figures:  # a finished export records what it read; a crash records nothing
            read = record.keyed([str(cfg.root / n) for n in self.reads], cfg.root)
            figures[record.FIGURE] = read.to_json()
        for job in jobs:
            for name in cache_key.bundle_keys(cfg, job):
                d = writer.fresh_dir(out / name)
                (d / MODEL).write_bytes(f"{name} model, export {self.generation}".encode())
                finding = CheckResult("export", Status.PASSED, "exported", dict(figures))
                manifest = writer.write(
                    d, cfg, exporter=job.exporter, requested_opset=job.opset, findings=[finding]
                )
                outcomes.append(Outcome(job, d, manifest, 0.1))
        return outcomes


def run(cfg: Config, tmp: Path, fake: FakeExport, out: str, **kw: object) -> tuple[list[Outcome], list[str]]:
    lines: list[str] = []
    outcomes = cache.export_cached(
        cfg, [JOB], tmp / out, lines.append, cache_root=tmp / "cache", export=fake, **kw
    )  # type: ignore[arg-type]
    return outcomes, lines


def test_a_second_run_exports_nothing_and_says_so(project: Path) -> None:
    cfg = load(project)
    fake = FakeExport()
    first, _ = run(cfg, project, fake, "out1")
    second, lines = run(cfg, project, fake, "out2")
    assert fake.calls == [["op17-dynamo"]]
    assert [o.directory.name for o in second] == ["op17-dynamo", "op17-dynamo-fp16"]
    assert sum("reused from cache" in line for line in lines) == 2, lines
    assert any(line.startswith("nothing exported") for line in lines), lines
    for a, b in zip(first, second, strict=True):
        reread = read_manifest(b.directory)  # every hash checked
        assert reread.files == a.manifest.files
        assert cache.was_reused(reread) and not cache.was_reused(a.manifest)
        export = next(f for f in reread.findings if f.name == "export")
        assert "reused from cache" in export.message and export.figures["cache"] == "reused"


@pytest.mark.parametrize("name", READ)
def test_an_edit_to_a_file_the_export_read_exports_again_and_names_it(project: Path, name: str) -> None:
    fake = FakeExport()
    run(load(project), project, fake, "out1")
    (project / name).write_bytes(b"edited")
    _, lines = run(load(project), project, fake, "out2")
    assert len(fake.calls) == 2
    assert f"op17-dynamo: re-exporting: {name} changed" in lines, lines
    assert not any("reused" in line for line in lines)
    export = read_manifest(project / "out2" / "op17-dynamo-fp16").findings[0]
    assert export.message.endswith(f"re-exported: {name} changed"), "every result and the report say why"
    _, third = run(load(project), project, fake, "out3")  # the fresh record replaced the stale one
    assert len(fake.calls) == 2 and any("reused from cache" in line for line in third), third


def test_a_file_the_export_did_not_read_leaves_the_entry_reused(project: Path) -> None:
    fake = FakeExport()
    run(load(project), project, fake, "out1")
    (project / "README.md").write_text("edited")
    (project / "tests").mkdir()
    (project / "tests" / "test_model.py").write_text("edited")
    _, lines = run(load(project), project, fake, "out2")
    assert len(fake.calls) == 1 and any("reused from cache" in line for line in lines), lines


def test_an_entry_without_a_record_is_exported_again(project: Path) -> None:
    fake = FakeExport()
    run(load(project), project, fake, "out1")
    [entry] = list(cache.entries(project / "cache"))
    meta = json.loads((entry / cache.ENTRY).read_text())
    del meta["record"]
    (entry / cache.ENTRY).write_text(json.dumps(meta))
    _, lines = run(load(project), project, fake, "out2")
    assert len(fake.calls) == 2
    assert "op17-dynamo: re-exporting: the cached export holds no record of what it read" in lines


def corrupt_file(entry: Path) -> None:
    (entry / "op17-dynamo-fp16" / MODEL).write_bytes(b"flipped bits")


def drop_entry_json(entry: Path) -> None:
    (entry / cache.ENTRY).unlink()


def drop_bundle(entry: Path) -> None:
    import shutil

    shutil.rmtree(entry / "op17-dynamo-fp16")


def bad_manifest(entry: Path) -> None:
    (entry / "op17-dynamo" / MANIFEST).write_text("{not json")


def edited_entry(entry: Path) -> None:
    meta = json.loads((entry / cache.ENTRY).read_text())
    meta["key"] = "0" * 64
    (entry / cache.ENTRY).write_text(json.dumps(meta))


@pytest.mark.parametrize("damage", [corrupt_file, drop_entry_json, drop_bundle, bad_manifest, edited_entry])
def test_a_corrupt_or_partial_entry_is_exported_again_with_a_warning(project: Path, damage: object) -> None:
    cfg = load(project)
    fake = FakeExport()
    run(cfg, project, fake, "out1")
    [entry] = list(cache.entries(project / "cache"))
    damage(entry)  # type: ignore[operator]
    outcomes, lines = run(cfg, project, fake, "out2")
    assert len(fake.calls) == 2, lines
    assert any("warning: the cached export is unusable" in line for line in lines), lines
    for o in outcomes:
        assert not cache.was_reused(read_manifest(o.directory))
        assert (o.directory / MODEL).read_bytes().endswith(b"export 2")
    # the fresh export replaced the bad entry, so the third run reuses it
    _, third = run(cfg, project, fake, "out3")
    assert len(fake.calls) == 2 and any("reused from cache" in line for line in third), third


def test_an_export_that_did_not_finish_is_not_stored(project: Path) -> None:
    fake = FakeExport(figures={})  # the parent's record of a crash or a timeout has no figures
    run(load(project), project, fake, "out1")
    run(load(project), project, fake, "out2")
    assert len(fake.calls) == 2
    assert list(cache.entries(project / "cache")) == []


def test_no_cache_exports_every_time(project: Path) -> None:
    fake = FakeExport()
    run(load(project), project, fake, "out1")
    _, lines = run(load(project), project, fake, "out2", enabled=False)
    assert len(fake.calls) == 2
    assert "export cache: off" in lines[0]


def test_export_cache_false_in_the_config() -> None:
    text = CONFIG.replace("timeout_s: 300}", "timeout_s: 300, cache: false}")
    assert config.parse(text, Path("onnx-gate.yml")).export.cache is False
    assert config.parse(CONFIG, Path("onnx-gate.yml")).export.cache is True


def test_the_least_recently_used_entries_beyond_the_limit_are_pruned(project: Path) -> None:
    import os

    fake = FakeExport()
    keys = []
    for n in range(3):
        (project / "samples.npz").write_bytes(f"samples {n}".encode())  # a file the key names
        cfg = load(project)
        run(cfg, project, fake, "out")
        key = cache_key.key_for(cfg, JOB, exclude=[project / "out", project / "cache"])
        keys.append(key.digest)
        entry = cache.entry_dir(project / "cache", key)
        os.utime(entry / cache.ENTRY, (1000.0 + n, 1000.0 + n))  # in order of use
    assert len(fake.calls) == 3 and len(list(cache.entries(project / "cache"))) == 3
    cache.prune(project / "cache", keep=2)
    assert [p.name for p in cache.entries(project / "cache")] == sorted(keys[1:])


def test_a_reused_derived_bundle_says_its_conversion_warnings_again() -> None:
    """A rerun that takes an int8-static bundle from the cache still prints what its calibration
    warned when it was made, as a fresh export does, and not the fp32 export's own warnings again."""
    from types import SimpleNamespace as NS

    def outcome(name: str, precision: str, warnings: tuple[str, ...]) -> Any:
        finding = NS(name="export", warnings=warnings, figures={})
        return NS(directory=Path(name), manifest=NS(precision=precision, findings=[finding]))

    exported = ("a branch froze",)
    restored = [
        outcome("op17-dynamo", "fp32", exported),
        outcome("op17-dynamo-int8-static", "int8-static", (*exported, "export.calibration looks sorted")),
    ]
    lines: list[str] = []
    cache._log_reused(restored, NS(short="abc123"), lines.append)  # type: ignore[arg-type]
    assert lines == [
        "op17-dynamo: reused from cache abc123, nothing exported",
        "op17-dynamo-int8-static: reused from cache abc123, nothing exported",
        "op17-dynamo-int8-static: warning: export.calibration looks sorted",
    ]


def test_declared_inputs_enter_the_key(project: Path) -> None:
    text = CONFIG.replace(
        "  samples: samples.npz\n",
        "  samples: samples.npz\n  depends_on: [tools/*.sh]\n  env: [MODEL_FLAVOUR]\n",
    )
    (project / "tools").mkdir()
    (project / "tools" / "convert.sh").write_text("echo 1\n")
    cfg = load(project, text)
    base = cache_key.key_for(cfg, JOB, environ={"MODEL_FLAVOUR": "small"})
    assert base.material["env"]["MODEL_FLAVOUR"] != "small", "a value is hashed, never stored"
    assert cache_key.key_for(cfg, JOB, environ={"MODEL_FLAVOUR": "large"}).digest != base.digest
    assert cache_key.key_for(cfg, JOB, environ={}).material["env"] == {"MODEL_FLAVOUR": "unset"}
    assert cache_key.key_for(cfg, JOB, environ={"MODEL_FLAVOUR": "small", "OTHER": "x"}).digest == base.digest
    (project / "tools" / "convert.sh").write_text("echo 2\n")
    assert cache_key.key_for(cfg, JOB, environ={"MODEL_FLAVOUR": "small"}).digest != base.digest


def test_a_declared_glob_that_matches_nothing_names_the_key(project: Path) -> None:
    from ci_onnx.contracts.errors import ConfigError

    cfg = load(
        project,
        CONFIG.replace("  samples: samples.npz\n", "  samples: samples.npz\n  depends_on: [tool/*.sh]\n"),
    )
    with pytest.raises(
        ConfigError, match=r"onnx-gate.yml:\d+: model.depends_on: 'tool/\*.sh' matches no file"
    ):
        cache_key.key_for(cfg, JOB)


def test_a_commit_s_cache_slot_is_the_key_and_the_commit() -> None:
    assert cache_key.slot("ab" * 16, "0123456789abcdef" * 2) == f"{'ab' * 16}-0123456789ab"
    assert cache_key.slot("ab" * 16, "") == "ab" * 16, "outside CI: the key alone"
    assert [cache_key.slot(w, "0123") for w in ("off", "uncacheable")] == ["off", "uncacheable"]
