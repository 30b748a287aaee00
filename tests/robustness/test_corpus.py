"""Every case of the bad-input corpus through the CLI: its exit code, one line naming the file, key or
target, no traceback, and the planted token nowhere in what comes out.

``python -m tests.robustness.figures`` prints the suite's figures (cases, tracebacks, token sightings).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from ci_onnx import plan as planning
from ci_onnx.cli import cli
from ci_onnx.contracts import bundle as bundle_mod
from ci_onnx.contracts.results import write_result
from ci_onnx.contracts.target import Status
from tests.golden import scenarios
from tests.robustness import corpus
from tests.robustness.corpus import Case

PLANTED = "ghp_PLANTEDtoken0123456789abcdefXYZ"
"""A token value set under every name a token travels by; it must show up nowhere."""
TOKEN_NAMES = (
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "INPUT_GITHUB_TOKEN",
    "INPUT_GITHUB-TOKEN",
    "ACTIONS_RUNTIME_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
    "HF_TOKEN",
    "MY_SECRET",
    "DB_PASSWORD",
    "AWS_SECRET_ACCESS_KEY",
)
CLEAN = ("GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT", "GITHUB_EVENT_PATH", "GITHUB_REPOSITORY", "GITHUB_ACTIONS")
"""Variables of the CI running these tests that must not leak into the cases (a real step summary)."""


def planted_env(d: Path, extra: dict[str, str]) -> dict[str, str | None]:
    env: dict[str, str | None] = {k: None for k in CLEAN}
    env.update({name: PLANTED for name in TOKEN_NAMES})
    env.update({k: v.replace("{d}", str(d)) for k, v in extra.items()})
    return env


# --- setups ----------------------------------------------------------------------------------------


def _results(d: Path) -> list[Any]:
    plan, results = scenarios.all_passing()
    (d / "plan.json").write_text(planning.to_json(plan))
    for r in results:
        write_result(d / "results" / f"onnx-gate-{r.target.id}", r)
    return results


def _broken(d: Path, name: str, replace: bool) -> None:
    results = _results(d)
    first = results[0]
    path = d / "results" / f"onnx-gate-{first.target.id}" / f"{first.target.id}.json"
    edit = next(e for n, e, _ in corpus.RESULT_EDITS if n == name)
    data = edit if isinstance(edit, bytes) else json.dumps(edit(json.loads(path.read_text()))).encode()
    if replace:
        path.unlink()
    (path.parent / "broken.json").write_bytes(data)


def _duplicates(d: Path, how: str) -> None:
    _, results = scenarios.all_passing()
    first = results[0]
    write_result(d / "results" / "a", dataclasses.replace(first, started_at="2026-11-29T21:00:00Z"))
    second = dataclasses.replace(first, started_at="2026-11-29T22:00:00Z")
    if how == "disagree":
        second = dataclasses.replace(second, status=Status.FAILED, summary="parity[logits]: off")
    if how == "rerun":
        write_result(
            d / "results" / "a",
            dataclasses.replace(first, status=Status.FAILED, started_at="2026-11-29T21:00:00Z", summary="x"),
        )
    write_result(d / "results" / "b", second)


def _plan_edit(d: Path, how: str) -> None:
    _results(d)
    p = d / "plan.json"
    data = json.loads(p.read_text())
    if how == "99":
        data["schema_version"] = 99
        p.write_text(json.dumps(data))
    elif how == "truncated":
        p.write_text(p.read_text()[:40])
    elif how == "binary":
        p.write_bytes(bytes(range(256)))
    elif how == "deep":
        p.write_bytes(b"[" * 100_000 + b"]" * 100_000)
    elif how == "targets":
        data["targets"] = "all"
        p.write_text(json.dumps(data))


def _manifest(b: Path, edit: Any) -> None:
    path = b / bundle_mod.MANIFEST
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


def _bundle_edit(d: Path, source: Path, edit: str) -> tuple[str, ...]:
    """Apply ``edit`` to a copy of the good bundle at d/bundle; returns argv replacements."""
    b = d / "bundle"
    shutil.copytree(source, b)
    outside = d / "outside"
    outside.mkdir()
    kind, _, arg = edit.partition(":")
    if kind == "rm":
        (b / arg).unlink()
    elif kind == "truncate":
        raw = (b / arg).read_bytes()
        (b / arg).write_bytes(raw[: len(raw) // 2])
    elif kind == "binary":
        (b / arg).write_bytes(bytes(range(256)))
    elif kind == "corrupt":
        raw = bytearray((b / arg).read_bytes())
        raw[len(raw) // 2] ^= 0xFF
        (b / arg).write_bytes(bytes(raw))
    elif kind == "symlink":
        (outside / "secret").write_text("not yours")
        (b / arg).symlink_to(outside / "secret")
        _manifest(b, lambda m: m["files"].__setitem__(arg, bundle_mod.sha256_of(outside / "secret")))
    elif kind == "symlink-dataset":
        shutil.move(b / "test_data_set_0", outside / "ds")
        (b / "test_data_set_0").symlink_to(outside / "ds", target_is_directory=True)
    elif kind == "symlink-model":
        shutil.move(b / bundle_mod.MODEL, outside / bundle_mod.MODEL)
        (b / bundle_mod.MODEL).symlink_to(outside / bundle_mod.MODEL)
    elif kind == "symlink-unlisted":  # a file a runner opens, dropped from manifest.files, linked out
        (outside / "secret").write_bytes((b / arg).read_bytes() if (b / arg).is_file() else b"not yours")
        if (b / arg).exists():
            (b / arg).unlink()
        (b / arg).symlink_to(outside / "secret")
        _manifest(b, lambda m: m["files"].pop(arg, None))
    elif kind == "symlink-unlisted-dir":
        shutil.move(b / arg, outside / arg)
        (b / arg).symlink_to(outside / arg, target_is_directory=True)
        _manifest(b, lambda m: [m["files"].pop(k) for k in list(m["files"]) if k.startswith(f"{arg}/")])
    elif kind == "target":
        return (arg,)
    elif kind == "manifest":
        _manifest(b, _MANIFEST_EDITS[arg])
    else:
        raise AssertionError(f"unknown bundle edit {edit}")
    return ()


def _tol(key: str, value: Any) -> Any:
    return lambda m: m["tolerance"].__setitem__(key, value)


_MANIFEST_EDITS: dict[str, Any] = {
    "schema_version=99": lambda m: m.__setitem__("schema_version", 99),
    "schema_version=0": lambda m: m.__setitem__("schema_version", 0),
    "files+../outside.txt": lambda m: m["files"].__setitem__("../outside.txt", "0" * 64),
    "files+/etc/passwd": lambda m: m["files"].__setitem__("/etc/passwd", "0" * 64),
    "dataset=/tmp": lambda m: m["test_data_sets"][0].__setitem__("directory", "/tmp"),
    "dataset=../": lambda m: m["test_data_sets"][0].__setitem__("directory", "../"),
    "atol=null": _tol("atol", None),
    "atol=-1": _tol("atol", -1),
    "rtol=null": _tol("rtol", None),
    "atol='x'": _tol("atol", "x"),
    "per-output-null": lambda m: m.__setitem__("tolerance_per_output", {"logits": {"atol": None, "rtol": 0}}),
    "top_k=0": lambda m: m["decision"].__setitem__("top_k", 0),
    "batch=0": lambda m: m.__setitem__("batch_sizes", [0, 8]),
    "extra=1": lambda m: m.__setitem__("extra", 1),
}


@pytest.fixture(scope="session")
def good_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests import bundles

    return bundles.mlp_bundle(tmp_path_factory.mktemp("good") / "bundle")


def prepare(case: Case, d: Path, good: Path | None) -> tuple[str, ...]:
    for rel, data in case.files.items():
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_bytes(data)
    kind, _, arg = case.setup.partition(":")
    argv = tuple(a.replace("{d}", str(d)) for a in case.argv)
    if kind == "results":
        _results(d) if not arg else _broken(d, arg, replace=False)
    elif kind == "results-beside":
        _broken(d, arg, replace=False)
    elif kind == "results-instead":
        _broken(d, arg, replace=True)
    elif kind == "duplicates":
        _duplicates(d, arg)
    elif kind == "plan-only":
        _results(d)
        shutil.rmtree(d / "results")
    elif kind == "plan":
        _plan_edit(d, arg)
    elif kind == "symlink":  # a link in the artifact to a file elsewhere
        _results(d)
        (d / "elsewhere").mkdir()
        if arg == "result":
            first = next((d / "results").rglob("*.json"))
            (d / "elsewhere" / "r.json").write_bytes(first.read_bytes())
            (d / "results" / "link.json").symlink_to(d / "elsewhere" / "r.json")
        else:
            (d / "elsewhere" / "x.xml").write_text("<testsuite><testcase name='t'/></testsuite>")
            (d / "junit").mkdir()
            (d / "junit" / "link.xml").symlink_to(d / "elsewhere" / "x.xml")
    elif kind == "bundle":
        assert good is not None
        replaced = _bundle_edit(d, good, arg)
        if replaced:
            argv = tuple(replaced[0] if a == corpus.TARGET else a for a in argv)
    return argv


# --- checks ----------------------------------------------------------------------------------------


@dataclasses.dataclass
class Outcome:
    exit_code: int
    traceback: bool
    token_seen: list[str]
    problems: list[str]


def judge(case: Case, result: Result, d: Path) -> Outcome:
    out = result.output
    problems = []
    traceback = "Traceback" in out or "internal error" in out
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        traceback = True
    if result.exit_code != case.exit_code:
        problems.append(f"exit {result.exit_code}, expected {case.exit_code}")
    if case.exit_code in (corpus.USAGE, corpus.INTERNAL):
        errors = [ln for ln in result.stderr.splitlines() if ln.startswith(("onnx-gate: error:", "Error:"))]
        if len(errors) != 1:
            problems.append(f"expected one error line, got {len(errors)}")
        text = errors[0] if errors else ""
    else:
        report = d / "out" / "report.md"
        text = out + (report.read_text() if report.is_file() else "")
    for word in case.says:
        if word not in text:
            problems.append(f"the message lacks {word!r}")
    seen = [f"output of {case.id}"] if PLANTED in out else []
    for f in d.rglob("*"):
        if f.is_file() and not f.is_symlink() and PLANTED.encode() in f.read_bytes():
            seen.append(str(f))
    return Outcome(result.exit_code, traceback, seen, problems)


def run_case(case: Case, d: Path, good: Path | None) -> tuple[Outcome, Result]:
    argv = prepare(case, d, good)
    result = CliRunner().invoke(cli, list(argv), env=planted_env(d, case.env), catch_exceptions=True)
    return judge(case, result, d), result


CASES = corpus.all_cases()


def test_the_corpus_is_large_and_its_ids_unique() -> None:
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))
    assert len(ids) >= 145


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case(case: Case, tmp_path: Path, good_bundle: Path) -> None:
    outcome, result = run_case(case, tmp_path, good_bundle if case.setup.startswith("bundle:") else None)
    detail = f"{case.id}: {outcome.problems}\n--- output ---\n{result.output[-3000:]}"
    assert not outcome.traceback, detail
    assert not outcome.token_seen, f"the planted token reached {outcome.token_seen}"
    assert not outcome.problems, detail


@pytest.mark.parametrize("runner", ["python", "node", "native", "web", "android"])
def test_an_unlisted_file_linked_outside_is_refused_before_any_kind_runs(
    runner: str, tmp_path: Path, good_bundle: Path
) -> None:
    """The one check every kind's verify passes through (verify.stage._prepare) covers files the
    manifest does not list: each kind opens test_data_set_N/input_i.pb by its index."""
    from ci_onnx.contracts.errors import BundleError
    from ci_onnx.contracts.target import Target
    from ci_onnx.verify import stage

    _bundle_edit(tmp_path, good_bundle, "symlink-unlisted:test_data_set_0/input_0.pb")
    provider = {"web": "wasm"}.get(runner, "cpu")
    target = Target("1.32.0", provider, 17, "onnx", runner=runner, api_level=34 if runner == "android" else 0)
    with pytest.raises(BundleError, match=r"input_0\.pb.*leads outside"):
        stage._prepare(0, tmp_path / "bundle", target, tmp_path / "out")


@pytest.mark.parametrize("where", ["inputs", "outputs", "dynamic_axes"])
def test_a_lone_surrogate_in_a_manifest_name_is_an_error_result_with_its_junit(
    where: str, tmp_path: Path, good_bundle: Path
) -> None:
    """No ONNX name can hold one (names are UTF-8): the target is an error saying where, not a crash."""
    _bundle_edit(tmp_path, good_bundle, "target:x")

    def edit(m: dict[str, Any]) -> None:
        if where == "dynamic_axes":
            m["dynamic_axes"]["\ud800"] = {"0": "batch"}
        else:
            m[where][0]["name"] = "y\ud800"

    _manifest(tmp_path / "bundle", edit)
    argv = [
        "verify",
        "--bundle",
        str(tmp_path / "bundle"),
        "--target",
        corpus.TARGET,
        "--out",
        str(tmp_path / "out"),
    ]
    r = CliRunner().invoke(cli, argv, env=planted_env(tmp_path, {}), catch_exceptions=True)
    assert "Traceback" not in r.output and "internal error" not in r.output, r.output[-2000:]
    assert r.exit_code == 1, r.output[-2000:]
    result = json.loads((tmp_path / "out" / "results" / f"{corpus.TARGET}.json").read_text())
    assert result["status"] == "error"
    assert "lone surrogate" in result["summary"] and where in result["summary"]
    junit = (tmp_path / "out" / "junit" / f"{corpus.TARGET}.xml").read_text(encoding="utf-8")
    assert "lone surrogate" in junit
