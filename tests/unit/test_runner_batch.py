"""One runner process for several targets, without a runtime: the Protocol's optional launch_many,
grouping by environment, and the batch loop's crash, hang and retry logic with a fake child that
runs the real ``batch.serve``."""

from __future__ import annotations

import io
import json
import os
import signal
import sys
import textwrap
from pathlib import Path

import pytest

from ci_onnx import config
from ci_onnx.contracts import proc
from ci_onnx.contracts.errors import EnvironmentProblem, UsageError
from ci_onnx.contracts.progress import Progress
from ci_onnx.contracts.results import read_result
from ci_onnx.contracts.target import Status, Target
from ci_onnx.contracts.verify_options import VerifyOptions
from ci_onnx.observer import ort
from ci_onnx.observer.jobs import MARKER, done_line, parse_marker, write_jobs
from ci_onnx.orchestration import localrun
from ci_onnx.runners import base, batch
from ci_onnx.verify import stage
from tests import bundles
from tests.conftest import EXAMPLE_CONFIG

ROOT = Path(__file__).parents[2]

FAKE_CHILD = textwrap.dedent(
    """\
    import os, signal, sys, time
    from pathlib import Path
    from ci_onnx.observer.jobs import serve

    LOG = Path(os.environ["ONNX_GATE_TEST_FAKE_LOG"])

    def one(argv):
        how = argv[0]
        with LOG.open("a") as f:
            f.write(f"{os.getpid()} {how}\\n")
        if how == "segv":
            os.kill(os.getpid(), signal.SIGSEGV)
        if how == "hang":
            time.sleep(600)
        if how == "exit":
            os._exit(0)
        if how == "raise":
            raise ValueError("this job broke")
        if how.startswith("wait:"):  # until the parent has heard of the job before
            deadline = time.monotonic() + 20
            while not Path(how[5:]).exists():
                if time.monotonic() > deadline:
                    return 3
                time.sleep(0.01)
        if how == "chatty":
            print("a line of the job's own on stdout", flush=True)
            print("and one on stderr", file=sys.stderr, flush=True)
        return 0

    sys.exit(serve(sys.argv[sys.argv.index("--jobs") + 1], one))
    """
)


Fake = tuple[tuple[str, ...], dict[str, str], Path]
"""The fake child's argv, its environment, and the log where it writes ``PID HOW`` per job."""


@pytest.fixture
def fake(tmp_path: Path) -> Fake:
    script = tmp_path / "fake_child.py"
    script.write_text(FAKE_CHILD)
    log = tmp_path / "log"
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(ROOT), "ONNX_GATE_TEST_FAKE_LOG": str(log)}
    return (sys.executable, str(script)), env, log


def run(
    fake: Fake, tmp_path: Path, *hows: str, timeout: float = 30
) -> tuple[list[proc.Completed], list[tuple[int, str]], list[int]]:
    program, env, log = fake
    heard: list[int] = []
    done = batch.run_jobs(
        program,
        [batch.Job((h,), timeout, h) for h in hows],
        workdir=tmp_path,
        env=env,
        on_done=lambda i, _c: heard.append(i),
    )
    lines = [line.split() for line in log.read_text().splitlines()]
    return done, [(int(pid), how) for pid, how in lines], heard


def children(ran: list[tuple[int, str]]) -> int:
    return len({pid for pid, _ in ran})


def test_every_job_runs_in_one_child_in_order(fake: Fake, tmp_path: Path) -> None:
    done, ran, heard = run(fake, tmp_path, "ok", "chatty", "ok")
    assert [d.ok for d in done] == [True, True, True]
    assert children(ran) == 1 and [h for _, h in ran] == ["ok", "chatty", "ok"]
    assert heard == [0, 1, 2]
    assert done[1].stderr == "and one on stderr\n", "each job's stderr is exactly its own"
    assert MARKER not in done[1].stdout + done[1].stderr
    assert not list(tmp_path.glob("jobs-*.json")), "the jobs files are removed"


def test_each_job_is_heard_while_the_child_goes_on_with_the_next(fake: Fake, tmp_path: Path) -> None:
    program, env, _ = fake
    flag = tmp_path / "heard-0"
    jobs = [batch.Job(("ok",), 30), batch.Job((f"wait:{flag}",), 30)]
    done = batch.run_jobs(program, jobs, workdir=tmp_path, env=env, on_done=lambda i, _c: flag.touch())
    assert [d.returncode for d in done] == [0, 0], "job 1 saw that the parent had judged job 0"


def test_a_crash_in_the_middle_is_that_jobs_signal_and_the_rest_run_in_a_fresh_child(
    fake: Fake,
    tmp_path: Path,
) -> None:
    done, ran, heard = run(fake, tmp_path, "ok", "segv", "ok", "ok")
    assert [d.ok for d in done] == [True, False, True, True]
    assert done[1].returncode == -signal.SIGSEGV
    assert done[1].describe_failure().startswith("killed by SIGSEGV")
    assert [h for _, h in ran] == ["ok", "segv", "ok", "ok"], "the crashed job is not run again"
    pids = [pid for pid, _ in ran]
    assert pids[0] == pids[1] != pids[2] == pids[3]
    assert heard == [0, 1, 2, 3]


def test_a_hang_is_that_jobs_timeout_the_child_is_killed_and_the_rest_still_run(
    fake: Fake,
    tmp_path: Path,
) -> None:
    program, env, log = fake
    jobs = [batch.Job(("ok",), 30), batch.Job(("hang",), 1.0), batch.Job(("ok",), 30)]
    done = batch.run_jobs(program, jobs, workdir=tmp_path, env=env)
    assert [d.ok for d in done] == [True, False, True]
    assert done[1].timed_out and done[1].describe_failure().startswith("timed out after 1 s")
    ran = [line.split() for line in log.read_text().splitlines()]
    hung = int(ran[1][0])
    assert ran[0][0] == ran[1][0] != ran[2][0]
    with pytest.raises(ProcessLookupError):
        os.kill(hung, 0)  # killed, not left running


def test_a_job_that_raises_is_its_own_error_and_the_child_goes_on(fake: Fake, tmp_path: Path) -> None:
    done, ran, _ = run(fake, tmp_path, "raise", "ok")
    assert done[0].returncode == 1 and "ValueError: this job broke" in done[0].describe_failure()
    assert done[1].ok and children(ran) == 1


def test_a_child_that_exits_before_finishing_fails_that_job_only(fake: Fake, tmp_path: Path) -> None:
    done, ran, _ = run(fake, tmp_path, "exit", "ok")
    assert not done[0].ok and "exited before it finished" in done[0].describe_failure()
    assert done[1].ok and children(ran) == 2


def test_crashes_everywhere_still_end_with_one_child_per_job(fake: Fake, tmp_path: Path) -> None:
    done, ran, _ = run(fake, tmp_path, "segv", "segv", "segv")
    assert [d.returncode for d in done] == [-signal.SIGSEGV] * 3
    assert children(ran) == 3


def test_an_early_child_reads_its_jobs_on_stdin_and_serves_them_all(fake: Fake, tmp_path: Path) -> None:
    """Started before its jobs are known (while the parent hashes the bundles), it is the first child."""
    program, env, log = fake
    early = batch.Early(program, env, "fake runner", tmp_path)
    assert early.child is not None
    pid = early.child.pid
    jobs = [batch.Job((h,), 30, h) for h in ("ok", "chatty", "ok")]
    done = batch.run_jobs(program, jobs, workdir=tmp_path, env=env, early=early)
    assert [d.ok for d in done] == [True, True, True]
    assert done[1].stderr == "and one on stderr\n"
    assert {int(line.split()[0]) for line in log.read_text().splitlines()} == {pid}
    assert early.take() is None, "handed over once"
    assert not list(tmp_path.glob("jobs-*.json")), "its jobs came on stdin, not in a file"


def test_an_early_child_that_crashes_costs_its_job_only(fake: Fake, tmp_path: Path) -> None:
    program, env, log = fake
    early = batch.Early(program, env, "fake runner", tmp_path)
    jobs = [batch.Job((h,), 30, h) for h in ("ok", "segv", "ok")]
    done = batch.run_jobs(program, jobs, workdir=tmp_path, env=env, early=early)
    assert [d.returncode for d in done] == [0, -signal.SIGSEGV, 0]
    pids = [int(line.split()[0]) for line in log.read_text().splitlines()]
    assert pids[0] == pids[1] != pids[2], "the rest in a fresh child, started from its jobs file"


def test_an_early_child_that_died_before_its_jobs_came_is_the_first_jobs_error(
    fake: Fake, tmp_path: Path
) -> None:
    program, env, log = fake
    dead = (sys.executable, "-c", "import sys; print('no runtime here', file=sys.stderr); sys.exit(3)")
    early = batch.Early(dead, env, "fake runner", tmp_path)
    assert early.child is not None
    early.child.wait()
    jobs = [batch.Job((h,), 30, h) for h in ("ok", "ok")]
    done = batch.run_jobs(program, jobs, workdir=tmp_path, env=env, early=early)
    assert done[0].returncode == 3 and "no runtime here" in done[0].describe_failure()
    assert done[1].ok and len(log.read_text().splitlines()) == 1


def test_an_early_child_never_used_is_ended_and_leaves_no_process(fake: Fake, tmp_path: Path) -> None:
    program, env, log = fake
    early = batch.Early(program, env, "fake runner", tmp_path)
    assert early.child is not None
    child = early.child
    early.close()
    assert child.returncode == 0, "no jobs on stdin: it served nothing and exited"
    with pytest.raises(ProcessLookupError):
        os.kill(child.pid, 0)
    assert not log.exists()
    early.close()  # twice is harmless


def test_a_bad_timeout_is_refused_before_anything_starts(fake: Fake, tmp_path: Path) -> None:
    program, env, log = fake
    with pytest.raises(EnvironmentProblem, match="t1 runner: a timeout of inf s"):
        batch.run_jobs(program, [batch.Job(("ok",), float("inf"), "t1 runner")], workdir=tmp_path, env=env)
    assert not log.exists()


def test_the_marker_parses_only_its_own_lines() -> None:
    assert parse_marker(done_line(3, -11)) == (3, -11)
    assert parse_marker("onnx-gate-batch-done x 0") is None
    assert parse_marker("something else 1 0") is None


def test_the_python_kind_batches_and_the_node_kind_keeps_one_process_per_target() -> None:
    assert base.batches(base.get("python"))
    assert not base.batches(base.get("node"))


class CountingRunner:
    """A kind without launch_many: base.launch_many falls back to one launch per target."""

    kind = "python"

    def __init__(self) -> None:
        self.launched: list[str] = []

    def launch(self, env, x, *, base_env):  # type: ignore[no-untyped-def]
        self.launched.append(x.target.id)
        return proc.Completed((), 0, "", "", 0.0)


def test_a_kind_without_launch_many_gets_one_launch_per_target(tmp_path: Path) -> None:
    runner = CountingRunner()
    env = base.RunnerEnv("python", "1.32.0", tmp_path, sys.executable)
    targets = [Target("1.32.0", "cpu", o, "onnx") for o in (17, 18)]
    launches = [base.Launch(tmp_path, t, tmp_path, VerifyOptions(), "CPUExecutionProvider") for t in targets]
    heard: list[int] = []
    done = base.launch_many(
        runner,  # type: ignore[arg-type]
        env,
        launches,
        base_env={},
        on_done=lambda i, _c: heard.append(i),
    )
    assert runner.launched == [t.id for t in targets] and heard == [0, 1] and all(d.ok for d in done)


def test_targets_are_grouped_by_runner_release_and_package() -> None:
    t = [
        Target("1.32.0", "cpu", 17, "dynamo"),
        Target("1.32.0", "cpu", 18, "dynamo"),
        Target("1.32.0", "xnnpack", 17, "dynamo"),  # the same onnxruntime package as cpu
        Target("1.32.0", "openvino", 17, "dynamo"),
        Target("1.20.1", "cpu", 17, "dynamo"),
        Target("1.32.0", "cpu", 17, "dynamo", runner="node"),
    ]
    found = {tuple(x.id for x in g) for g in batch.groups(t, workers=1)}
    assert found == {
        (t[0].id, t[1].id, t[2].id),
        (t[3].id,),
        (t[4].id,),
        (t[5].id,),
    }


def test_a_large_group_is_split_only_to_keep_the_workers_busy() -> None:
    same = [Target("1.32.0", "cpu", o, e) for o in (17, 18, 19, 20) for e in ("dynamo", "torchscript")]
    assert [len(g) for g in batch.groups(same, workers=1)] == [8]
    assert [len(g) for g in batch.groups(same, workers=2)] == [4, 4]
    assert [len(g) for g in batch.groups(same, workers=16)] == [1] * 8
    assert sorted(t.id for g in batch.groups(same, workers=3) for t in g) == sorted(t.id for t in same)


def test_an_unknown_provider_is_a_group_of_its_own() -> None:
    odd, cpu = Target("1.32.0", "nosuch", 17, "dynamo"), Target("1.32.0", "cpu", 17, "dynamo")
    assert batch.groups([odd, cpu], workers=1) == [[odd], [cpu]]


def test_no_token_of_any_name_reaches_the_batch_child(tmp_path: Path) -> None:
    b = bundles.mlp_bundle(tmp_path / "mlp")
    program = tmp_path / "fake-python"
    program.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        f"open({str(tmp_path / 'seen-env')!r}, 'a').write(json.dumps(dict(os.environ)) + '\\n')\n"
        "src = sys.argv[sys.argv.index('--jobs') + 1]\n"
        "for job in json.load(sys.stdin if src == '-' else open(src)):\n"
        "    print('onnx-gate-batch-done', job['index'], 0, file=sys.stderr, flush=True)\n"
    )
    program.chmod(0o755)
    env = base.RunnerEnv("python", "1.32.0", tmp_path, str(program), "onnxruntime")
    secrets = {"GITHUB_TOKEN": "t", "ACTIONS_RUNTIME_TOKEN": "t", "HF_TOKEN": "t", "PIP_PASSWORD": "t"}
    launches = [
        base.Launch(
            b, Target("1.32.0", "cpu", 17, "onnx"), tmp_path / f"obs{i}", VerifyOptions(timeout_s=30), "x"
        )
        for i in range(3)
    ]
    runner = base.get("python")
    base_env = {"PATH": "/usr/bin:/bin", **secrets}
    done = runner.launch_many(env, launches, base_env=base_env)  # type: ignore[attr-defined]
    with base.early_child(runner, env, base_env=base_env, count=3) as early:  # started before its jobs
        assert early is not None
        done += base.launch_many(runner, env, launches, base_env=base_env, early=early)
    assert [d.ok for d in done] == [True] * 6
    seen = [json.loads(line) for line in (tmp_path / "seen-env").read_text().splitlines()]
    assert len(seen) == 2, "one child for the three targets, each way"
    for child_env in seen:
        assert not set(secrets) & set(child_env)
        assert child_env["PATH"] == "/usr/bin:/bin" and child_env["PYTHONPATH"]


def test_the_observer_names_what_a_single_target_needs_and_refuses_nested_jobs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        ort.main(["--ep", "CPUExecutionProvider"])
    assert exc.value.code == 2
    assert "required: --bundle, --target-json, --out" in capsys.readouterr().err
    jobs = tmp_path / "jobs.json"
    write_jobs(jobs, [(0, ["--jobs", str(jobs)])])
    assert ort.main(["--jobs", str(jobs)]) == 0
    err = capsys.readouterr().err
    assert err.index("cannot hold --jobs") < err.index(done_line(0, 1))


def test_the_judge_reads_numeric_tensors_without_importing_onnx(tmp_path: Path) -> None:
    """onnx's import (with ml_dtypes) was most of the parent's fixed cost per verify process."""
    import subprocess

    import numpy as np
    from onnx import numpy_helper

    from ci_onnx.contracts import tensorproto
    from ci_onnx.verify import decode

    values = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
    tensorproto.save(tmp_path / "f.pb", values, "f")
    code = (
        "import sys; from pathlib import Path; from ci_onnx.verify import decode; "
        f"a = decode.load(Path({str(tmp_path / 'f.pb')!r})); print(a.dtype, a.shape, 'onnx' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
    )
    assert done.stdout.split() == ["float32", "(3,", "4)", "False"], done.stderr
    onnx_reads = numpy_helper.to_array(numpy_helper.from_array(values))
    np.testing.assert_array_equal(decode.load(tmp_path / "f.pb"), onnx_reads)
    from onnx import TensorProto, helper

    bf16 = helper.make_tensor("b", TensorProto.BFLOAT16, [2], [1.5, -2.0])
    (tmp_path / "bf16.pb").write_bytes(bf16.SerializeToString())
    got = decode.load(tmp_path / "bf16.pb")  # no numpy dtype: onnx's numpy_helper reads it, as before
    assert got.dtype.name == "bfloat16" and got.astype(np.float32).tolist() == [1.5, -2.0]
    (tmp_path / "bad.pb").write_bytes(b"\xff\xff\xff")
    with pytest.raises(decode.DecodeError, match="not a readable tensor"):
        decode.load(tmp_path / "bad.pb")


def _group_run(tmp_path: Path) -> tuple[list[Target], config.Config, localrun.RunOptions, io.StringIO]:
    targets = [Target("1.32.0", "cpu", o, "dynamo") for o in (17, 18, 19)]
    options = localrun.RunOptions(out=tmp_path / "out", cache_dir=tmp_path / "cache", jobs=1)
    return targets, config.load(EXAMPLE_CONFIG), options, io.StringIO()


def test_an_environment_that_cannot_be_made_is_every_one_of_its_targets_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    targets, cfg, options, stream = _group_run(tmp_path)
    made: list[str] = []

    def provision(target: Target, how: base.Provisioning) -> base.RunnerEnv:
        made.append(target.id)
        raise EnvironmentProblem("onnxruntime 1.32.0: no wheel for this platform")

    monkeypatch.setattr(base, "provision", provision)
    progress = Progress([t.id for t in targets], stream, live=False)
    statuses = localrun._verify_groups([(targets, cfg)], options, progress)
    assert made == [targets[0].id], "one environment, provisioned once for its targets"
    assert statuses == dict.fromkeys((t.id for t in targets), Status.ERROR)
    for t in targets:
        r = read_result(options.out / "results" / f"{t.id}.json")
        assert "no wheel for this platform" in r.summary and f"--only {t.id}" in r.reproduce


def test_a_runner_that_fails_mid_group_leaves_no_target_without_a_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    targets, cfg, options, stream = _group_run(tmp_path)
    env = base.RunnerEnv("python", "1.32.0", tmp_path, sys.executable, "onnxruntime")
    monkeypatch.setattr(base, "provision", lambda target, how: env)
    seen: list[list[str]] = []

    def verify_many(items, out_dir, opts, *, base_env, environment, on_written, run_config):  # type: ignore[no-untyped-def]
        seen.append([t.id for _, t in items])
        on_written(0, UsageError("target ort1.32.0-cpu-op17-dynamo verifies bundle op17-dynamo, but …"))
        raise EnvironmentProblem("python runner: cannot start python (No such file or directory)")

    monkeypatch.setattr(stage, "verify_many", verify_many)
    progress = Progress([t.id for t in targets], stream, live=False)
    statuses = localrun._verify_groups([(targets, cfg)], options, progress)
    assert seen == [[t.id for t in targets]], "the whole group goes to one verify_many"
    assert statuses == dict.fromkeys((t.id for t in targets), Status.ERROR)
    first = read_result(options.out / "results" / f"{targets[0].id}.json")
    assert "verifies bundle op17-dynamo" in first.summary
    rest = [read_result(options.out / "results" / f"{t.id}.json") for t in targets[1:]]
    assert all("cannot start python" in r.summary for r in rest)
