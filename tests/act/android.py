"""What the verify-android job needs from the host under act, each a labelled stand-in (tests only).

The job runs on GitHub's ubuntu-latest; here it runs on this host (act's self-hosted mode), so:

- ``sudo`` and ``udevadm`` (:func:`host_tools`): the KVM step's commands, recorded into a log and
  never run: nothing is written under /etc and no udev rule changes on this host. The stand-in
  ``sudo`` accepts only what the step calls (``tee FILE``, ``udevadm ...``) and refuses the rest.
- Maven Central (:func:`maven`): unreachable from here; a loopback HTTP server laid out as a Maven
  repository (tests/support/maven.py) serves the recorded maven-metadata.xml, which the plan job
  resolves the android releases from, and one real AAR (the official onnxruntime-android AAR the
  Unity package com.github.asus4.onnxruntime carries) under its release; the jobs' $ONNX_GATE_MAVEN
  points at it. It records every path asked for; any other path is a 404.
- $ANDROID_NDK_LATEST_HOME (:func:`ndk`): a directory with the one compiler path the job checks,
  ``x86_64-linux-android24-clang``, a wrapper that says it is a stand-in and runs the host's cc.
- The action's repository (:func:`action_source`): ``pip install git+https://github.com/onnx-gate/
  onnx-gate@v1`` clones from a local copy of this checkout's HEAD, tagged v1, by git's ``insteadOf``
  (given through GIT_CONFIG_* variables); pip, the build and the dependencies' install are real.
"""

from __future__ import annotations

import contextlib
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

from tests.conftest import REPO
from tests.support import maven as maven_repository

AAR_PATH = maven_repository.AAR_PATH

SUDO = """\
#!/bin/sh
# STAND-IN for sudo (tests/act/android.py): records the call, runs nothing as root, writes no file.
echo "sudo $*" >> "{log}"
case "$1" in
  tee) echo "  stdin: $(cat)" >> "{log}"; exit 0 ;;
  udevadm) shift; exec "{bin}/udevadm" "$@" ;;
  *) echo "sudo stand-in: refusing '$*' (only tee and udevadm are expected)" >&2; exit 1 ;;
esac
"""
UDEVADM = """\
#!/bin/sh
# STAND-IN for udevadm (tests/act/android.py): records the call, changes nothing.
echo "udevadm $*" >> "{log}"
"""
CLANG = """\
#!/bin/sh
# STAND-IN for the NDK's x86_64-linux-android24-clang (tests/act/android.py): the HOST's cc, which
# builds for this Linux host, not for Android.
exec cc "$@"
"""


def _script(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def host_tools(bin_dir: Path, log: Path) -> Path:
    """``sudo`` and ``udevadm`` stand-ins in ``bin_dir`` (put it first on PATH); calls go to ``log``."""
    _script(bin_dir / "sudo", SUDO.format(log=log, bin=bin_dir))
    _script(bin_dir / "udevadm", UDEVADM.format(log=log))
    return bin_dir


def ndk(root: Path) -> Path:
    """A stand-in $ANDROID_NDK_LATEST_HOME whose x86_64-linux-android24-clang runs the host's cc."""
    _script(root / "toolchains/llvm/prebuilt/linux-x86_64/bin/x86_64-linux-android24-clang", CLANG)
    (root / "STAND-IN.txt").write_text(
        "Not an Android NDK: a stand-in for the act tests (tests/act/android.py).\n"
    )
    return root


@contextlib.contextmanager
def maven(root: Path, aars: dict[str, Path]) -> Iterator[tuple[str, list[str]]]:
    """A Maven repository at ``root`` holding the recorded metadata and ``aars`` (release → AAR file),
    served on loopback; yields its base URL (what $ONNX_GATE_MAVEN takes) and the paths asked for."""
    with maven_repository.serve(root, aars) as served:
        yield served


def action_source(dest: Path, url: str, ref: str) -> dict[str, str]:
    """A bare clone of this checkout's HEAD at ``dest``, tagged ``ref``; returns the environment that
    makes git fetch ``url`` from it (GIT_CONFIG_COUNT/KEY/VALUE: url.<dest>.insteadOf <url>)."""
    subprocess.run(["git", "clone", "-q", "--bare", str(REPO), str(dest)], check=True, capture_output=True)
    subprocess.run(["git", "-C", str(dest), "tag", "-f", ref, "HEAD"], check=True, capture_output=True)
    return {
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": f"url.file://{dest}.insteadOf",
        "GIT_CONFIG_VALUE_0": url,
    }
