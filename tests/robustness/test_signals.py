"""Children die with their parent: a signal to an onnx-gate command ends its runner's process group
(the runner and what it started), the clean-ups of processes that left it (a browser), and starts no
child after it. Each case counts the processes still alive afterwards: the suite's orphans figure."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.robustness.test_faults import _fake_python
from tests.robustness.test_faults import bundle_dir as bundle_dir  # the module's fixture

TARGET = "ort1.32.0-cpu-op17-onnx"
SIGNALS = {"SIGTERM": signal.SIGTERM, "SIGHUP": signal.SIGHUP, "SIGINT": signal.SIGINT}


def alive(pid: int) -> bool:
    """Running (a zombie waiting for its reaper is not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _wait_for(path: Path, n: int, timeout: float = 60.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.is_file():
            pids = [int(x) for x in path.read_text().split()]
            if len(pids) >= n:
                return pids
        time.sleep(0.05)
    raise AssertionError(
        f"the runner did not start: {path} holds {path.read_text() if path.is_file() else '-'}"
    )


def orphans_after(sig: int, tmp_path: Path, bundle_dir: Path) -> tuple[int, int, str]:
    """Signal `onnx-gate verify` while its runner (and a grandchild of the runner) run; the number of
    those still alive 5 s later, onnx-gate's exit status and its stderr."""
    pids = tmp_path / "pids"
    body = f'sleep 300 & echo $! >> "{pids}"; echo $$ >> "{pids}"; wait'
    python = _fake_python(tmp_path, body)
    argv = [sys.executable, "-m", "ci_onnx", "verify", "--bundle", str(bundle_dir), "--target", TARGET,
            "--out", str(tmp_path / "out"), "--python", str(python), "--timeout", "600"]  # fmt: skip
    gate = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        children = _wait_for(pids, 2)
        gate.send_signal(sig)
        _, err = gate.communicate(timeout=60)
    finally:
        if gate.poll() is None:
            gate.kill()
    deadline = time.monotonic() + 5
    while any(alive(p) for p in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [p for p in children if alive(p)]
    for p in left:
        os.kill(p, signal.SIGKILL)
    return len(left), gate.returncode, err


@pytest.mark.parametrize("name", list(SIGNALS))
def test_a_signal_to_verify_ends_the_runner_and_its_children(
    name: str, tmp_path: Path, bundle_dir: Path
) -> None:
    left, code, err = orphans_after(SIGNALS[name], tmp_path, bundle_dir)
    assert left == 0, f"{left} runner process(es) outlived onnx-gate; stderr: {err[-2000:]}"
    assert "Traceback" not in err
    if name == "SIGINT":
        assert code == 130 and "interrupted" in err
    else:
        assert code == -SIGNALS[name]  # it dies of the signal, as a cancelled CI step expects


def test_the_clean_ups_of_processes_that_left_the_group_run_and_nothing_starts_after(tmp_path: Path) -> None:
    script = tmp_path / "parent.py"
    pid_file = tmp_path / "pids"
    script.write_text(
        "import os, signal, subprocess, time\n"
        "from ci_onnx.contracts import proc\n"
        "proc.end_children_on_signals()\n"
        "loner = subprocess.Popen(['setsid', 'sleep', '300'])  # leaves every group, as Chromium does\n"
        "with proc.cleanup(lambda: os.kill(loner.pid, signal.SIGKILL)):\n"
        "    child = proc.spawn(['sleep', '300'], os.environ, 'sleeper')\n"
        f"    open({str(pid_file)!r}, 'w').write(f'{{loner.pid}} {{child.pid}}')\n"
        "    try:\n"
        "        time.sleep(300)\n"
        "    except KeyboardInterrupt:\n"
        "        try:\n"
        "            proc.spawn(['sleep', '1'], os.environ, 'after')\n"
        "        except Exception as exc:\n"
        "            print(exc)\n"
    )
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    pids = _wait_for(pid_file, 2)
    parent.send_signal(signal.SIGINT)
    out, _ = parent.communicate(timeout=60)
    time.sleep(0.5)
    assert not [p for p in pids if alive(p)]
    assert "not started, onnx-gate is stopping on a signal" in out
