"""Plan expansion, as properties over generated matrices."""

from __future__ import annotations

import dataclasses
import itertools
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ci_onnx import config, matrix
from ci_onnx import plan as planning
from ci_onnx.contracts.errors import ConfigError, UsageError
from ci_onnx.contracts.target import Target
from ci_onnx.host.resolve import NoRelease, resolve
from ci_onnx.plan import cijobs, expansion
from tests.conftest import EXAMPLE_CONFIG, FakeIndex

BASE = config.load(EXAMPLE_CONFIG)
RELEASES = [
    "1.32.0",
    "1.31.1",
    "1.24.4",
    "1.24.3",
    "1.23.2",
    "1.20.1",
    "1.18.1",
    "1.17.3",
    "1.16.3",
    "1.15.1",
]
INDEX = FakeIndex(
    {
        "onnxruntime": RELEASES,
        "onnxruntime-openvino": ["1.24.1", "1.23.0", "1.20.0", "1.17.1"],
        "onnxruntime-gpu": ["1.31.1", "1.24.4", "1.20.0"],
    }
)

runtime_specs = st.lists(
    st.sampled_from([*RELEASES, "1.24.*", "1.17.*", "latest", "1.20"]), min_size=1, max_size=5, unique=True
)
providers = st.lists(st.sampled_from(["cpu", "openvino", "cuda"]), min_size=1, max_size=3, unique=True)
opsets = st.lists(st.integers(min_value=13, max_value=28), min_size=1, max_size=5, unique=True)
exporters = st.lists(st.sampled_from(["dynamo", "torchscript"]), min_size=1, max_size=2, unique=True)
rules = st.lists(
    st.dictionaries(
        st.sampled_from(["runtime", "provider", "opset", "exporter"]),
        st.sampled_from(["1.2*", "1.17.3", "cpu", "openvino", "1[78]", "2?", "dynamo", "*"]),
        min_size=1,
        max_size=2,
    ),
    max_size=3,
)


def configured(
    rt: list[str], pv: list[str], ops: list[int], ex: list[str], excl: list[dict[str, str]]
) -> config.Config:
    return dataclasses.replace(
        BASE,
        export=dataclasses.replace(BASE.export, opsets=tuple(ops), exporters=tuple(ex)),
        targets=config.TargetsConfig(
            runtimes=tuple(rt), providers=tuple(pv), include=(), exclude=tuple(excl)
        ),
    )


@settings(max_examples=150, deadline=None)
@given(runtime_specs, providers, opsets, exporters, rules)
def test_expansion_properties(rt, pv, ops, ex, excl) -> None:  # type: ignore[no-untyped-def]
    cfg = configured(rt, pv, ops, ex, excl)
    if any(all(_matches_nothing(spec, p) for p in pv) for spec in rt):
        # a spec that matches no release of any provider's package is a mistake in the file
        with pytest.raises(ConfigError, match=r"(matches|has) no release"):
            planning.expand(cfg, INDEX)
        return
    if _an_exact_release_is_missing(rt, pv, ops, ex, excl):
        with pytest.raises(ConfigError, match=r"has no release .* \(nearest: "):
            planning.expand(cfg, INDEX)
        return
    plan = planning.expand(cfg, INDEX)
    ids = [t.id for t in plan.targets]

    # ids are unique, sorted stably, and parse back into the very same cell
    assert len(ids) == len(set(ids))
    for t in plan.targets:
        again = Target.from_id(t.id)
        assert (again.runtime, again.provider, again.opset, again.exporter) == (
            t.runtime,
            t.provider,
            t.opset,
            t.exporter,
        )

    # the same config, declared in another order, plans the same ids in the same order
    shuffled = configured(rt[::-1], pv[::-1], ops[::-1], ex[::-1], excl)
    assert [t.id for t in planning.expand(shuffled, INDEX).targets] == ids

    # exclude is honoured, and nothing else is dropped
    expected = set()
    for spec, provider, opset, exporter in itertools.product(rt, pv, ops, ex):
        package = matrix.providers()[provider].package
        try:
            version = resolve(spec, package, INDEX)
        except NoRelease:
            version = spec.removesuffix(".*")
        target = Target(version, provider, opset, exporter, runtime_spec="" if spec == version else spec)
        if not expansion._excluded(target, excl):
            expected.add(target.id)
    assert set(ids) == expected

    # compatibility pruning agrees with the declared table
    for t in plan.targets:
        caps = matrix.caps_for(t.runtime)
        too_new = t.opset > caps.max_opset
        no_release = "has no release matching" in t.expected_skip
        assert bool(t.expected_skip) == (no_release or too_new or _provider_too_old(t)), t
        if too_new and not no_release:
            assert f"loads opset <= {caps.max_opset}" in t.expected_skip


def _an_exact_release_is_missing(
    rt: list[str], pv: list[str], ops: list[int], ex: list[str], excl: list[dict[str, str]]
) -> bool:
    """A kept cell pins an exact release its provider's package does not have (and is not too old)."""
    for spec, provider, opset, exporter in itertools.product(rt, pv, ops, ex):
        if not (spec.count(".") == 2 and "*" not in spec):
            continue
        target = Target(spec, provider, opset, exporter)
        releases = INDEX.versions(matrix.providers()[provider].package)
        if (
            spec not in releases
            and not expansion._excluded(target, excl)
            and not planning.with_skip_reason(target).expected_skip
        ):
            return True
    return False


def _matches_nothing(spec: str, provider: str) -> bool:
    try:
        resolve(spec, matrix.providers()[provider].package, INDEX)
    except NoRelease:
        return True
    return False


def _provider_too_old(t: Target) -> bool:
    info = matrix.providers()[t.provider]
    return bool(info.min_runtime) and matrix.version_key(t.runtime) < matrix.version_key(info.min_runtime)


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=0, max_value=900))
def test_split_matrices_cover_every_runnable_cell_exactly_once(n: int) -> None:
    targets = tuple(Target(f"1.{20 + i // 100}.{i % 100}", "cpu", 17, "dynamo") for i in range(n))
    plan = planning.Plan(1, "x.yml", "m", targets)  # every target an environment of its own
    matrices = cijobs.job_matrices(plan, "container")
    assert all(len(m["include"]) <= cijobs.MAX_JOBS_PER_MATRIX for m in matrices)
    seen = [i for m in matrices for e in m["include"] for i in e["targets"]]
    assert sorted(seen) == sorted(t.id for t in targets)
    outputs = cijobs.github_outputs(plan)
    assert int(outputs["matrices"]) == len(matrices) == max(1, -(-n // 256))
    from_outputs = [json.loads(outputs["matrix"])] + [
        json.loads(outputs[f"matrix-{k}"]) for k in range(2, len(matrices) + 1)
    ]
    assert from_outputs == matrices


def test_expected_skip_keeps_the_reason_and_leaves_the_matrix() -> None:
    cfg = configured(["1.17.3", "1.20.1"], ["cpu"], [17, 21], ["dynamo"], [])
    plan = planning.expand(cfg, INDEX)
    skip = {t.id: t.expected_skip for t in plan.targets if t.expected_skip}
    assert skip == {
        "ort1.17.3-cpu-op21-dynamo": "onnxruntime 1.17 loads opset <= 20; opset 21 needs onnxruntime >= 1.18"
    }
    in_matrix = {i for e in cijobs.job_matrices(plan, "container")[0]["include"] for i in e["targets"]}
    assert "ort1.17.3-cpu-op21-dynamo" not in in_matrix and len(in_matrix) == 3
    assert "expected skip: onnxruntime 1.17 loads opset <= 20" in planning.render_table(plan)


def test_wildcards_and_latest_resolve_per_provider_package() -> None:
    cfg = configured(["latest", "1.24.*"], ["cpu", "openvino"], [17], ["dynamo"], [])
    ids = [t.id for t in planning.expand(cfg, INDEX).targets]
    assert ids == [
        "ort1.24.1-openvino-op17-dynamo",
        "ort1.24.4-cpu-op17-dynamo",
        "ort1.32.0-cpu-op17-dynamo",
    ]


def test_only_selects_by_glob_and_rejects_a_glob_matching_nothing() -> None:
    plan = planning.expand(BASE, INDEX)
    kept = planning.select(plan, ["ort1.2*-cpu-*"])
    assert kept.targets and all(t.provider == "cpu" and t.runtime.startswith("1.2") for t in kept.targets)
    with pytest.raises(UsageError, match=r"--only 'ort9\*' matches no target"):
        planning.select(plan, ["ort9*"])


def test_plan_json_round_trips(tmp_path: Path) -> None:
    plan = planning.expand(BASE, INDEX)
    path = tmp_path / "plan.json"
    path.write_text(planning.to_json(plan))
    assert planning.read_plan(path) == plan


def test_github_output_uses_the_heredoc_form(tmp_path: Path) -> None:
    out = tmp_path / "github_output"
    plan = planning.expand(BASE, INDEX)
    planning.write_github_output(out, cijobs.github_outputs(plan))
    text = out.read_text()
    block = text.split("matrix<<ghadelim_onnx_gate\n", 1)[1].split("\nghadelim_onnx_gate\n", 1)[0]
    entries = json.loads(block)["include"]
    assert sum(len(e["targets"]) for e in entries) == len(plan.runnable) == 12


def test_the_plan_reads_what_a_kind_declares_not_its_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """An API level is an id axis of a kind whose row declares it (``id_axes``), and the oldest
    release of a provider's package (providers.toml's min_runtime) bounds a kind that runs in a
    Python interpreter from PyPI (``interpreter``): the python kind, declared otherwise, is planned
    otherwise."""
    index = FakeIndex({"onnxruntime-openvino": ["1.24.1", "1.16.0"]})
    base = configured(["1.16.0", "1.24.1"], ["openvino"], [17], ["dynamo"], [])
    cfg = dataclasses.replace(base, targets=dataclasses.replace(base.targets, android_api_level=30))
    before = {t.id: t for t in planning.expand(cfg, index).targets}
    assert all(t.api_level == 0 for t in before.values())
    assert "the oldest is 1.17" in before["ort1.16.0-openvino-op17-dynamo"].expected_skip
    rows = dict(matrix.runners())
    can = dataclasses.replace(rows["python"].can, id_axes=("api_level",), interpreter=False)
    rows["python"] = dataclasses.replace(rows["python"], can=can)
    monkeypatch.setattr(matrix, "runners", lambda: rows)
    after = {t.id: t for t in planning.expand(cfg, index).targets}
    assert set(after) == {"api30-ort1.16.0-openvino-op17-dynamo", "api30-ort1.24.1-openvino-op17-dynamo"}
    assert all(t.api_level == 30 for t in after.values())
    assert after["api30-ort1.16.0-openvino-op17-dynamo"].expected_skip == ""
