"""An adb transport: push, pull and shell on one device, each with a timeout, through :func:`proc.run`.

``adb shell CMD`` carries the remote command's exit status back only where both ends speak the
shell v2 protocol (adb 1.0.36+ and Android 7+); older pairs return 0 whatever the command did. So
every remote command here ends in ``; echo onnx-gate-rc=$?`` and the status is read from that last
line, which works on every adb; a shell whose marker never came is a failure, never a pass.

A missing, unauthorized or offline device is one line naming the serial and what to do, raised as
EnvironmentProblem by :meth:`Adb.check_device`. Everything after that (a push that fails, a remote
command that exits non-zero or hangs) is a value, :class:`proc.Completed`, so a cell errors and
the others go on.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from ci_onnx.contracts import proc
from ci_onnx.contracts.errors import EnvironmentProblem

RC_MARKER = "onnx-gate-rc="
_RC_LINE = re.compile(rf"^{RC_MARKER}(\d+)\s*$", re.MULTILINE)
DEVICE_TIMEOUT_S = 30.0
TRANSFER_TIMEOUT_S = 600.0
ADB_ENV = "ONNX_GATE_ADB"
"""An adb executable to use instead of the one on PATH (or in $ANDROID_HOME/platform-tools)."""
SERIAL_ENV = "ANDROID_SERIAL"
"""The device to talk to, as adb itself reads it; empty: the only device adb sees."""

_STATES = (
    (re.compile(r"unauthori[sz]ed", re.I), "is unauthorized: accept the USB debugging prompt on the device"),
    (re.compile(r"offline", re.I), "is offline: reconnect it, or restart the server (`adb kill-server`)"),
    (
        re.compile(r"more than one (device|emulator)", re.I),
        "is ambiguous: more than one is attached; set ANDROID_SERIAL to a serial `adb devices` lists",
    ),
    (
        re.compile(r"no devices?(/emulators)? found|not found", re.I),
        "is not attached: boot an emulator or plug in a device, and check `adb devices`",
    ),
)


def find_adb(environ: Mapping[str, str]) -> str:
    """The adb to use: $ONNX_GATE_ADB, else adb on PATH, else the SDK's platform-tools."""
    explicit = environ.get(ADB_ENV, "")
    if explicit:
        if not (os.path.isfile(explicit) and os.access(explicit, os.X_OK)):
            raise EnvironmentProblem(f"{ADB_ENV}={explicit}: not an executable adb")
        return explicit
    found = shutil.which("adb", path=environ.get("PATH"))
    if found:
        return found
    for sdk in (environ.get("ANDROID_HOME", ""), environ.get("ANDROID_SDK_ROOT", "")):
        candidate = Path(sdk) / "platform-tools" / "adb" if sdk else None
        if candidate is not None and candidate.is_file():
            return str(candidate)
    raise EnvironmentProblem(
        "the android runner needs adb: install the Android SDK platform-tools and put adb on PATH "
        f"(or set {ADB_ENV})"
    )


def remote_status(stdout: str) -> tuple[str, int | None]:
    """The remote command's output without the marker line, and its exit status (None: no marker)."""
    matches = list(_RC_LINE.finditer(stdout))
    if not matches:
        return stdout, None
    last = matches[-1]
    return stdout[: last.start()] + stdout[last.end() :].lstrip("\n"), int(last.group(1))


@dataclasses.dataclass(frozen=True)
class Adb:
    """One device reached through one adb executable."""

    program: str
    serial: str = ""
    environ: Mapping[str, str] = dataclasses.field(default_factory=dict)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> Adb:
        return cls(find_adb(environ), environ.get(SERIAL_ENV, ""), environ)

    @property
    def device(self) -> str:
        return f"device {self.serial}" if self.serial else "the device"

    def argv(self, *args: str) -> list[str]:
        return [self.program, *(("-s", self.serial) if self.serial else ()), *args]

    def _run(self, *args: str, timeout: float, what: str) -> proc.Completed:
        return proc.run(self.argv(*args), timeout=timeout, env=self.environ, what=what)

    def check_device(self, timeout: float = DEVICE_TIMEOUT_S) -> None:
        """EnvironmentProblem in one line unless the device answers as ``device``."""
        done = self._run("get-state", timeout=timeout, what=f"adb get-state ({self.device})")
        state = done.stdout.strip()
        if done.ok and state == "device":
            return
        text = f"{done.stderr} {state}"
        if done.timed_out:
            raise EnvironmentProblem(f"adb: {self.device} did not answer within {timeout:.0f} s")
        for pattern, why in _STATES:
            if pattern.search(text):
                raise EnvironmentProblem(f"adb: {self.device} {why}")
        raise EnvironmentProblem(f"adb: {self.device} is not ready ({done.describe_failure() or state})")

    def push(self, local: Path, remote: str, timeout: float = TRANSFER_TIMEOUT_S) -> proc.Completed:
        return self._run("push", str(local), remote, timeout=timeout, what=f"adb push {local.name}")

    def pull(self, remote: str, local: Path, timeout: float = TRANSFER_TIMEOUT_S) -> proc.Completed:
        return self._run("pull", remote, str(local), timeout=timeout, what=f"adb pull {remote}")

    def shell(self, argv: Sequence[str], *, timeout: float, what: str = "") -> proc.Completed:
        """Run ``argv`` on the device; the Completed carries the remote exit status as returncode.

        A hang is ``timed_out`` (adb is killed; the remote process is asked to stop too)."""
        command = " ".join(shlex.quote(a) for a in argv)
        done = self._run("shell", f"{command}; echo {RC_MARKER}$?", timeout=timeout, what=what or "adb shell")
        if done.timed_out:
            self.kill_remote(argv[0])
            return done
        out, rc = remote_status(done.stdout)
        if rc is None:  # adb failed before the command ran (or the device went away mid-run)
            returncode = done.returncode or 255
            stderr = done.stderr or "adb shell: the device returned no exit status"
            return dataclasses.replace(done, returncode=returncode, stderr=stderr)
        return dataclasses.replace(done, stdout=out, returncode=rc if rc < 128 else -(rc - 128))

    def kill_remote(self, program: str) -> None:
        """Best effort: stop what a timed-out shell left running on the device (killing adb here
        leaves it running there). The last character in brackets keeps pkill off its own shell."""
        pattern = f"{program[:-1]}[{program[-1]}]" if program else ""
        if pattern:
            self._run(
                "shell", f"pkill -9 -f {shlex.quote(pattern)}", timeout=DEVICE_TIMEOUT_S, what="adb pkill"
            )

    def getprop(self, name: str) -> str:
        done = self.shell(["getprop", name], timeout=DEVICE_TIMEOUT_S, what=f"adb getprop {name}")
        return done.stdout.strip() if done.ok else ""
