#!/usr/bin/env python3
"""A stand-in for ``adb`` with a "device" that is a directory of this machine (tests only).

``/data/local/tmp`` on the device is ``ROOT``; ``adb shell`` runs the command with ``sh -c`` here,
with the device paths in it rewritten to ``ROOT``, so the adb sequence of the android runner runs
the Linux build of its observer against a Linux libonnxruntime. What it imitates of the real adb:
``-s SERIAL``, ``get-state``, ``push``/``pull`` (file or directory, into an existing directory or to
a new path), ``shell`` (the arguments joined by spaces, as adb sends them), ``getprop`` from a table,
and the real one's error lines for no device, an unauthorized one, an offline one, a wrong serial.

ROOT/.standin.json steers the device: {"state": "device"|"unauthorized"|"offline"|"none",
"serial": "emulator-5554", "legacy": false (true: an old adb that exits 0 whatever the remote
command did), "hang": false (true: a device on which the observer never returns), "props": {...}}. :func:`install` writes an ``adb`` wrapper for a test's PATH.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

DEVICE_TMP = "/data/local/tmp"
PROPS = {
    "ro.product.cpu.abi": "x86_64",
    "ro.build.version.sdk": "34",
    "ro.kernel.qemu": "1",
    "ro.product.model": "sdk_gphone64_x86_64",
}
ERRORS = {
    "none": "error: no devices/emulators found",
    "unauthorized": (
        "error: device unauthorized.\nThis adb server's $ADB_VENDOR_KEYS is not set\n"
        "Try 'adb kill-server' if that seems wrong.\nOtherwise check for a confirmation dialog on your device."
    ),
    "offline": "error: device offline",
}


def install(bin_dir: Path, root: Path, **settings: object) -> Path:
    """Write ``bin_dir/adb`` running this stand-in on ``root``; ``settings`` go to .standin.json."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    root.mkdir(parents=True, exist_ok=True)
    configure(root, **settings)
    adb = bin_dir / "adb"
    adb.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{Path(__file__).resolve()}" --root "{root}" "$@"\n')
    adb.chmod(adb.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return adb


def configure(root: Path, **settings: object) -> None:
    path = root / ".standin.json"
    current = (
        json.loads(path.read_text()) if path.is_file() else {"state": "device", "serial": "emulator-5554"}
    )
    path.write_text(json.dumps({**current, **settings}))


def _local(root: Path, remote: str) -> Path:
    if not remote.startswith(DEVICE_TMP):
        sys.exit(f"adb: error: stand-in device: only {DEVICE_TMP} is writable, not {remote}")
    return root / remote[len(DEVICE_TMP) :].lstrip("/")


def _copy(src: Path, dst: Path) -> int:
    if not src.exists():
        print(f"adb: error: cannot stat '{src}': No such file or directory", file=sys.stderr)
        return 1
    if dst.is_dir():
        dst = dst / src.name
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.is_dir():
        shutil.copytree(src, dst, dirs_exist_ok=True)
        n = sum(1 for p in dst.rglob("*") if p.is_file())
    else:
        shutil.copy2(src, dst)
        n = 1
    print(f"{src}: {n} file{'s' if n != 1 else ''} pushed.")
    return 0


def _shell(root: Path, args: list[str], settings: dict[str, object]) -> int:
    command = " ".join(args).replace(DEVICE_TMP, str(root))
    tools = root / ".bin"
    tools.mkdir(exist_ok=True)
    props = {**PROPS, **settings.get("props", {})}  # type: ignore[dict-item]
    getprop = tools / "getprop"
    getprop.write_text(
        '#!/bin/sh\ncase "$1" in\n'
        + "".join(f'  {k}) echo "{v}";;\n' for k, v in props.items())
        + '  *) echo "";;\nesac\n'
    )
    getprop.chmod(0o755)
    env = {**os.environ, "PATH": f"{tools}{os.pathsep}{os.environ.get('PATH', '')}"}
    if settings.get("hang") and "/observe " in command:
        while True:  # a device that hangs the observer; adb's caller times it out
            time.sleep(60)
    rc = subprocess.call(["sh", "-c", command], cwd=root, env=env)
    if settings.get("legacy"):
        return 0  # adb before shell v2: the remote status is lost
    return rc if rc >= 0 else 128 - rc


def main(argv: list[str]) -> int:
    root = Path(argv[argv.index("--root") + 1])
    args = argv[argv.index("--root") + 2 :]
    settings = json.loads((root / ".standin.json").read_text())
    serial = ""
    if args[:1] == ["-s"]:
        serial, args = args[1], args[2:]
    state = str(settings.get("state", "device"))
    if not args:
        print("adb: usage: no command", file=sys.stderr)
        return 1
    if serial and serial != settings.get("serial"):
        print(f"error: device '{serial}' not found", file=sys.stderr)
        return 1
    if state != "device":
        print(ERRORS.get(state, ERRORS["none"]), file=sys.stderr)
        return 1
    command, rest = args[0], args[1:]
    if command == "get-state":
        print("device")
        return 0
    if command == "push" and len(rest) == 2:
        return _copy(Path(rest[0]), _local(root, rest[1]))
    if command == "pull" and len(rest) == 2:
        return _copy(_local(root, rest[0]), Path(rest[1]))
    if command == "shell" and rest:
        return _shell(root, rest, settings)
    print(f"adb: stand-in: unsupported command {args!r}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
