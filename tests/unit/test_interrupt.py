"""Ctrl-C stops a test run at once, with every process it started.

A pytest is started the way a terminal runs it (its own process group, then SIGINT to that group)
on a test that is waiting on children which are themselves waiting on grandchildren. It must end as
interrupted (exit code 2, the next test never runs) and leave no process behind: not the children
onnx-gate starts in sessions of their own (which the terminal's SIGINT never reaches), not what a
tool such as act starts in process groups of its own.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.conftest import REPO

CHILD = """#!/bin/sh
# a runtime that hangs, and a process of its own that hangs with it
sleep 300 &
echo $$ >> {pids}
echo $! >> {pids}
wait
"""

TOOL = """#!/bin/sh
# a tool (act) whose step runs in a process group of its own
setsid sleep 300 &
echo $$ >> {pids}
echo $! >> {pids}
wait
"""

SCENARIOS = {
    # `onnx-gate verify` through click's CliRunner, as the act tests call `onnx-gate run`
    "cli": """
        from click.testing import CliRunner
        from ci_onnx.cli import cli
        result = CliRunner().invoke(cli, ["verify", "--bundle", BUNDLE, "--target", TARGET,
                                          "--out", OUT, "--python", CHILD])
        raise AssertionError(f"not interrupted: exit {result.exit_code}: {result.output}")
    """,
    # the verify stage called as a library, its runner waited on by a thread
    "library": """
        import os
        from ci_onnx.verify import stage
        from ci_onnx.contracts.verify_options import VerifyOptions
        target, options = stage.settings(TARGET, None, None, timeout_s=None)
        stage.verify(Path(BUNDLE), target, Path(OUT), options, python=CHILD, base_env=dict(os.environ))
    """,
    # the verify stage again, but the kernel hands the SIGINT to a thread that is not the main one
    # (it may pick any thread that does not block it): the main thread, waiting on the worker that
    # waits on its child, is never interrupted by it
    "worker-thread": """
        import os, signal, threading, time
        from ci_onnx.verify import stage
        from ci_onnx.contracts.verify_options import VerifyOptions

        def ctrl_c_on_this_thread():
            while not Path(PIDS + ".go").is_file():  # the outer test has seen the children
                time.sleep(0.05)
            signal.pthread_kill(threading.get_ident(), signal.SIGINT)

        threading.Thread(target=ctrl_c_on_this_thread, daemon=True).start()
        target, options = stage.settings(TARGET, None, None, timeout_s=None)
        stage.verify(Path(BUNDLE), target, Path(OUT), options, python=CHILD, base_env=dict(os.environ))
    """,
    # act, as tests/act/harness.py runs it
    "tool": """
        from tests.support import tree
        tree.run([TOOL], timeout=600)
    """,
}


SIGNALLED_FROM_INSIDE = {"worker-thread"}
"""Scenarios whose SIGINT a thread of the test itself sends, to itself."""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_ctrl_c_ends_the_run_and_everything_it_started(tmp_path: Path, scenario: str) -> None:
    from tests import bundles

    pids, ran_on = tmp_path / "pids", tmp_path / "ran-on"
    for name, text in (("child", CHILD), ("tool", TOOL)):
        script = tmp_path / name
        script.write_text(text.format(pids=pids))
        script.chmod(0o755)
    bundle = bundles.mlp_bundle(tmp_path / "mlp")
    body = textwrap.indent(textwrap.dedent(SCENARIOS[scenario]), "    ")
    dump = tmp_path / "threads.txt"  # where the stuck pytest's threads are written, should it hang
    (tmp_path / "test_hangs.py").write_text(
        "import faulthandler, signal\nfrom pathlib import Path\n"
        f"faulthandler.register(signal.SIGUSR1, file=open({str(dump)!r}, 'w'), all_threads=True)\n"
        f"BUNDLE, OUT, TARGET = {str(bundle)!r}, {str(tmp_path / 'out')!r}, 'ort1.32.0-cpu-op17-onnx'\n"
        f"CHILD, TOOL = {str(tmp_path / 'child')!r}, {str(tmp_path / 'tool')!r}\n"
        f"PIDS = {str(pids)!r}\n\n"
        f"def test_waits_on_children():\n{body}\n\n"
        f"def test_after_it():\n    Path({str(ran_on)!r}).write_text('the run went on')\n"
    )
    run = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.conftest",
         "--rootdir", str(tmp_path), str(tmp_path / "test_hangs.py")],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)}, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not (pids.is_file() and len(pids.read_text().split()) >= 2):
            assert run.poll() is None, run.communicate()[0]
            assert time.monotonic() < deadline, "the children never started"
            time.sleep(0.1)
        started = [int(p) for p in pids.read_text().split()]
        assert all(_alive(p) for p in started)
        if scenario in SIGNALLED_FROM_INSIDE:
            Path(f"{pids}.go").write_text("")
        else:
            os.killpg(run.pid, signal.SIGINT)  # what the terminal does on Ctrl-C
        try:
            output, _ = run.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.kill(run.pid, signal.SIGUSR1)
            time.sleep(1)
            os.killpg(run.pid, signal.SIGKILL)
            output, _ = run.communicate()
            threads = dump.read_text() if dump.is_file() else "(no dump)"
            pytest.fail(f"pytest still ran 60 s after Ctrl-C; its threads then:\n{threads}\n{output}")
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
    assert run.returncode == pytest.ExitCode.INTERRUPTED, output
    assert "KeyboardInterrupt" in output, output
    assert not ran_on.exists(), "pytest went on to the next test"
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in started) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [p for p in started if _alive(p)]
    listed = ["ps", "-o", "pid,ppid,pgid,sid,stat,etime,cmd", "-p", ",".join(map(str, left)) or "1"]
    seen = subprocess.run(listed, capture_output=True, text=True, check=False).stdout
    for p in left:
        os.kill(p, signal.SIGKILL)
    assert not left, f"processes left running after Ctrl-C: {left}\n{seen}\n{output}"
