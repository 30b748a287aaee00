"""The fault suite: GitHub failing in every way it does, and runtimes that crash, hang, are killed or
write nothing. Targets: no exception, no lost result, no duplicated comment or check run, the token
nowhere, and a warning that says truthfully what was (or may have been) posted."""

from __future__ import annotations

import contextlib
import io
import json
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from ci_onnx.cli import cli
from ci_onnx.github.checks import external_id
from ci_onnx.github.client import Client, RetryPolicy
from ci_onnx.github.context import GitHubContext
from ci_onnx.report import gate, view
from ci_onnx.report.collect import merge
from ci_onnx.report.publish import publish
from ci_onnx.report.render import MARKER
from tests.fakegithub import server
from tests.fakegithub.server import FakeGitHub
from tests.golden import scenarios
from tests.robustness.github_faults import FAULTS, GitHubFault
from tests.robustness.test_corpus import PLANTED, TOKEN_NAMES

SHA = "4f1d2c3b9a8e7f6d5c4b3a29180706f5e4d3c2b1"
PR = 7


@pytest.fixture
def gh() -> Iterator[FakeGitHub]:
    with server.running(lifetime_s=120) as fake:
        yield fake
        assert fake.state.violations == []


def _view() -> view.ReportView:
    plan, results = scenarios.tinycnn()  # two failing targets: annotations on the check run
    c = merge({r.target.id: r for r in results}, plan)
    return view.build(c, gate.decide(c, plan))


def published(fake: FakeGitHub, fault: GitHubFault) -> tuple[list[str], list[str], int, int]:
    for _ in range(fault.existing_comments):
        fake.state.add_comment(PR, f"{MARKER}\nan earlier report", server.ACTIONS_BOT)
    fake.state.faults.extend(fault.faults)
    fake.state.list_lag = fault.list_lag
    client = Client(
        server.TOKEN,
        fake.url,
        timeout=(0.5, 0.5),
        retry=RetryPolicy(attempts=3, backoff_s=0.0),
        sleep=lambda _s: None,
    )
    infos: list[str] = []
    warns: list[str] = []
    ctx = GitHubContext(token=server.TOKEN, repository=fake.repo, api_url=fake.url, sha=SHA, pr_number=PR)
    publish(_view(), ctx, client, info=infos.append, warn=warns.append, check_name="onnx-gate")
    comments = sum(MARKER in c["body"] for c in fake.state.comments.values())
    runs = sum(r.get("external_id") == external_id("onnx-gate") for r in fake.state.check_runs.values())
    return infos, warns, comments, runs


@pytest.mark.parametrize("fault", FAULTS, ids=[f.id for f in FAULTS])
def test_github_fault(gh: FakeGitHub, fault: GitHubFault) -> None:
    infos, warns, comments, runs = published(gh, fault)
    said = " ".join([*infos, *warns])
    assert server.TOKEN not in said
    assert comments == fault.comments, said
    assert runs == fault.check_runs, said
    if fault.warns:
        assert any(fault.warns in w for w in warns), said
    if fault.id == "none":
        assert not warns


def test_a_second_report_edits_in_place(gh: FakeGitHub) -> None:
    """A re-run for the same commit: still one comment and one check run, both updated."""
    for _ in range(3):
        _, warns, comments, runs = published(gh, FAULTS[0])
        assert not warns
    assert (comments, runs) == (1, 1)


def test_the_next_report_removes_what_a_failed_delete_left(gh: FakeGitHub) -> None:
    delete_fails = next(f for f in FAULTS if f.id == "delete-fails")
    assert published(gh, delete_fails)[2] == 2
    gh.state.faults.clear()
    assert published(gh, FAULTS[0])[2] == 1


# --- through the CLI: tokens as they arrive from the environment ------------------------------------


def _report_env(fake: FakeGitHub, tmp: Path, token: str) -> dict[str, str | None]:
    event = tmp / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": PR, "head": {"sha": SHA}}}))
    env: dict[str, str | None] = {k: None for k in os.environ if k.startswith("GITHUB_")}
    env.update(
        GITHUB_TOKEN=token,
        GITHUB_REPOSITORY=fake.repo,
        GITHUB_API_URL=fake.url,
        GITHUB_EVENT_PATH=str(event),
        GITHUB_OUTPUT=str(tmp / "output"),
        GITHUB_ACTIONS="true",
    )
    return env


def _verdict(tmp: Path) -> str:
    """The ``verdict`` step output, as written to $GITHUB_OUTPUT (heredoc style)."""
    lines = (tmp / "output").read_text().splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("verdict"))
    return lines[start].partition("=")[2] if "=" in lines[start] else lines[start + 1]


def _report(fake: FakeGitHub, tmp: Path, token: str) -> tuple[int, str]:
    from tests.robustness.test_corpus import _results

    _results(tmp)
    argv = [
        "report",
        "--results",
        str(tmp / "results"),
        "--plan",
        str(tmp / "plan.json"),
        "--out",
        str(tmp / "out"),
    ]
    r = CliRunner().invoke(cli, argv, env=_report_env(fake, tmp, token), catch_exceptions=True)
    assert r.exception is None or isinstance(r.exception, SystemExit), r.output
    assert "Traceback" not in r.output
    return r.exit_code, r.output


@pytest.mark.parametrize("padding", ["\n", " \n", "\t", "\r\n"])
def test_a_token_with_whitespace_around_it_is_stripped(gh: FakeGitHub, tmp_path: Path, padding: str) -> None:
    code, out = _report(gh, tmp_path, server.TOKEN + padding)
    assert code == 0 and server.TOKEN not in out
    assert sum(MARKER in c["body"] for c in gh.state.comments.values()) == 1
    assert _verdict(tmp_path) == "pass"


@pytest.mark.parametrize(
    "token", ["ghs_caf\u00e9", "ghs_\u2603snow", "ghs_in side", "ghs_ctl\x01", "ghs_\x7fdel"]
)
def test_a_token_no_header_can_carry_is_a_warning_not_a_traceback(
    gh: FakeGitHub, tmp_path: Path, token: str
) -> None:
    code, out = _report(gh, tmp_path, token)
    assert code == 0 and "nothing was posted" in out
    assert token.strip() not in out
    assert _verdict(tmp_path) == "pass"
    assert not gh.state.comments


@pytest.mark.parametrize("status", [200, 201])
def test_an_html_200_from_github_still_sets_the_verdict(gh: FakeGitHub, tmp_path: Path, status: int) -> None:
    gh.state.faults.append(server.Fault("GET", r"/comments$", status, html="<html>proxy</html>", times=99))
    gh.state.faults.append(server.Fault("GET", r"/check-runs$", status, html="<html>proxy</html>", times=99))
    code, out = _report(gh, tmp_path, server.TOKEN)
    assert code == 0 and "not JSON" in out
    assert _verdict(tmp_path) == "pass"


# --- runtimes that crash, hang, are killed, or write nothing ----------------------------------------

RUNNERS = {
    # name: a shell body standing in for the target's interpreter ($OUT: the runner's --out), message
    "segfault": ("kill -SEGV $$", "SIGSEGV"),
    "abort": ("kill -ABRT $$", "SIGABRT"),
    "oom-kill": ("kill -KILL $$", "SIGKILL"),
    "hang": ("sleep 60", "timed out"),
    "grandchild-holds-the-pipes": ("setsid sleep 20 & sleep 60", "timed out"),
    "exit-1": ("echo 'onnxruntime: cannot load' >&2; exit 1", "exit code 1"),
    "exit-0-writes-nothing": ("exit 0", "no observation.json"),
    "garbage-observation": ("printf 'not json' > \"$OUT/observation.json\"", "unreadable observation"),
    "observation-list": ("printf '[]' > \"$OUT/observation.json\"", "unreadable observation"),
    "observation-deep": (
        "python3 -c \"print('['*100000+']'*100000)\" > \"$OUT/observation.json\"",
        "unreadable observation",
    ),
    "output-outside": (
        'printf \'{"schema_version":1,"target_id":"t","environment":null,'
        '"outputs":{"test_data_set_0":{"logits":"../../../bundle/test_data_set_0/output_0.pb"}}}\' '
        '> "$OUT/observation.json"',
        "not a path inside",
    ),
    "output-missing": (
        'printf \'{"schema_version":1,"target_id":"t","environment":null,'
        '"outputs":{"test_data_set_0":{"logits":"nothing.pb"}}}\' > "$OUT/observation.json"',
        "",
    ),
}


def _fake_python(tmp: Path, body: str) -> Path:
    """An 'interpreter' that finds --out in its arguments, dumps its environment, then does ``body``."""
    script = tmp / "python"
    script.write_text(
        "#!/bin/sh\n"
        'OUT=""; prev=""\n'
        'for a in "$@"; do [ "$prev" = "--out" ] && OUT="$a"; prev="$a"; done\n'
        f'env > "{tmp}/child-env.txt"\n'
        f"{body}\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


@pytest.fixture(scope="module")
def bundle_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests import bundles

    return bundles.mlp_bundle(tmp_path_factory.mktemp("faults") / "bundle")


@pytest.mark.parametrize("name", list(RUNNERS))
def test_runtime_fault(name: str, tmp_path: Path, bundle_dir: Path) -> None:
    body, says = RUNNERS[name]
    python = _fake_python(tmp_path, body)
    target = "ort1.32.0-cpu-op17-onnx"
    argv = ["verify", "--bundle", str(bundle_dir), "--target", target, "--out", str(tmp_path / "out")]
    argv += ["--python", str(python), "--timeout", "1"]
    env = {k: PLANTED for k in TOKEN_NAMES}
    r = CliRunner().invoke(cli, argv, env=env, catch_exceptions=True)
    assert r.exception is None or isinstance(r.exception, SystemExit), r.output
    assert "Traceback" not in r.output
    assert r.exit_code == 1, r.output
    result = json.loads((tmp_path / "out" / "results" / f"{target}.json").read_text())
    assert result["status"] == "error"
    assert says in result["summary"] + json.dumps(result["checks"])
    junit = (tmp_path / "out" / "junit" / f"{target}.xml").read_text()
    assert "<error" in junit
    child_env = (tmp_path / "child-env.txt").read_text()
    assert PLANTED not in child_env and PLANTED not in r.output
    assert not any(name + "=" in child_env for name in TOKEN_NAMES)


def test_the_child_environment_holds_no_token_of_any_name() -> None:
    from ci_onnx.contracts import proc

    environ = {
        **{name: PLANTED for name in TOKEN_NAMES},
        "PATH": "/usr/bin",
        "HOME": "/home/u",
        "PIP_INDEX_URL": "https://pypi.example/simple",
        "PIP_PASSWORD": PLANTED,
        "UV_KEYRING_PROVIDER": "subprocess",
        "GH_PAT": PLANTED,
        "NPM_AUTH": PLANTED,
        "RANDOM_THING": PLANTED,
        "LD_LIBRARY_PATH": "/opt/lib",
        "GIT_AUTHOR_NAME": "someone",
    }
    env = proc.child_environment(environ)
    assert PLANTED not in env.values()
    assert {
        "PATH",
        "HOME",
        "PIP_INDEX_URL",
        "UV_KEYRING_PROVIDER",
        "LD_LIBRARY_PATH",
        "GIT_AUTHOR_NAME",
    } <= set(env)


def test_a_real_child_sees_none_of_the_planted_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    from ci_onnx.contracts import proc

    for name in TOKEN_NAMES:
        monkeypatch.setenv(name, PLANTED)
    done = proc.run([sys.executable, "-c", "import os; print(dict(os.environ))"], timeout=60)
    assert done.ok and PLANTED not in done.stdout


def test_a_github_that_is_slow_everywhere_cannot_hold_the_job(gh: FakeGitHub) -> None:
    """Every answer late: each request gives up at its timeout, and the client's budget ends the rest."""
    gh.state.faults.append(server.Fault("GET", r".", 200, delay_s=0.6, times=999))
    gh.state.faults.append(server.Fault("POST", r".", 201, delay_s=0.6, after=True, times=999))
    client = Client(
        server.TOKEN,
        gh.url,
        timeout=(0.3, 0.3),
        retry=RetryPolicy(attempts=3, backoff_s=0.0, budget_s=2.0),
        sleep=lambda _s: None,
    )
    warns: list[str] = []
    ctx = GitHubContext(token=server.TOKEN, repository=gh.repo, api_url=gh.url, sha=SHA, pr_number=PR)
    publish(_view(), ctx, client, info=lambda _m: None, warn=warns.append)
    assert warns and all(server.TOKEN not in w for w in warns)
    assert sum(MARKER in c["body"] for c in gh.state.comments.values()) <= 1
    assert len(gh.state.check_runs) <= 1


@pytest.mark.parametrize("after", [True, False])
def test_a_tracking_issue_is_opened_once_whatever_the_502(gh: FakeGitHub, after: bool) -> None:
    from ci_onnx.github import issues
    from ci_onnx.github.context import Repo

    gh.state.faults.append(server.Fault("POST", r"/issues$", 502, after=after))
    client = Client(server.TOKEN, gh.url, retry=RetryPolicy(attempts=3, backoff_s=0.0), sleep=lambda _s: None)
    marker = "<!-- onnx-gate:nightly:t -->"
    got = issues.upsert(client, Repo.parse(gh.repo), title="t", body=f"{marker}\nbroken", marker=marker)
    assert got.action == "created"
    assert sum(marker in (i.get("body") or "") for i in gh.state.issues.values()) == 1


def test_a_grandchild_that_left_the_group_cannot_hold_a_timeout_open(tmp_path: Path) -> None:
    """It keeps the pipes open after the child is killed: the wait for them is bounded."""
    import signal

    from ci_onnx.contracts import proc

    pid_file = tmp_path / "grandchild.pid"
    code = (
        "import subprocess, time; p = subprocess.Popen(['sleep', '300'], start_new_session=True); "
        f"open({str(pid_file)!r}, 'w').write(str(p.pid)); time.sleep(300)"
    )
    try:
        done = proc.run([sys.executable, "-c", code], timeout=2)
        assert done.timed_out
        assert done.duration_s < 2 + proc.DRAIN_S + 30  # not the grandchild's 300 s
    finally:
        if pid_file.is_file():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid_file.read_text()), signal.SIGKILL)


def test_in_run_one_target_that_breaks_the_verifier_is_an_error_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever escapes verifying one target becomes its error result; the other targets go on."""
    from ci_onnx.config import load
    from ci_onnx.contracts.progress import Progress
    from ci_onnx.contracts.target import Status, Target
    from ci_onnx.orchestration import localrun
    from ci_onnx.runners import base
    from ci_onnx.verify import stage
    from tests.robustness import corpus

    (tmp_path / corpus.CONFIG).write_bytes(corpus._yaml(corpus.BASE))
    cfg = load(tmp_path / corpus.CONFIG)
    target = Target("1.20.1", "cpu", 17, "dynamo")

    def boom(*_a: object, **_k: object) -> object:
        raise IndexError("list index out of range")

    monkeypatch.setattr(
        base, "provision", lambda t, _how: base.RunnerEnv(t.runner, t.runtime, tmp_path, "py")
    )
    monkeypatch.setattr(stage, "verify", boom)
    monkeypatch.setattr(stage, "verify_many", boom)
    options = localrun.RunOptions(out=tmp_path / "out", cache_dir=tmp_path / "cache", jobs=1)
    progress = Progress([target.id], io.StringIO(), live=False)
    status = localrun._verify_groups([([target], cfg)], options, progress)[target.id]
    assert status is Status.ERROR
    result = json.loads((tmp_path / "out" / "results" / f"{target.id}.json").read_text())
    assert "IndexError" in result["summary"] + json.dumps(result["checks"])
    assert (tmp_path / "out" / "junit" / f"{target.id}.xml").is_file()
