"""A STAND-IN for the native observer (ci_onnx/runners/native/observe.c), for the unit tests of the
adb sequence only: it takes the observer's argv (the native runner contract), runs no model, and
writes an observation.json whose outputs are the bundle's own reference files, copied. What it
proves is the transport (push, shell, pull, exit status, timeout), never numerics: the e2e test in
tests/e2e/test_android_runner.py runs the real observer through the same sequence.

``./.standin.json`` (the stand-in device's root, its working directory) picks a behaviour with
``"observer"``: ok (default), exit (a usage error, exit 3), crash (SIGSEGV), hang (sleeps).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import time
from pathlib import Path


def _args(argv: list[str]) -> dict[str, str]:
    out, i = {}, 0
    while i < len(argv):
        key = argv[i].removeprefix("--")
        if key == "strict-fallback":
            out[key] = "1"
            i += 1
        else:
            out[key] = argv[i + 1]
            i += 2
    return out


def main(argv: list[str]) -> int:
    settings_file = Path(".standin.json")
    mode = json.loads(settings_file.read_text()).get("observer", "ok") if settings_file.is_file() else "ok"
    a = _args(argv)
    if mode == "exit":
        print("observe: --ep bogus: unknown execution provider", file=sys.stderr)
        return 3
    if mode == "crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    if mode == "hang":
        time.sleep(3600)
    lib, bundle, out = Path(a["lib"]), Path(a["bundle"]), Path(a["out"])
    if not lib.is_file():
        print(f"observe: --lib {lib}: no such library", file=sys.stderr)
        return 2
    data = lib.read_bytes()
    at = data.find(b"VERS_")
    version = data[at + 5 : data.index(b"\0", at)].decode() if at >= 0 else "unknown"
    manifest = json.loads((bundle / "manifest.json").read_text())
    names = [o["name"] for o in manifest["outputs"]]
    outputs: dict[str, dict[str, str]] = {}
    for ds in manifest["test_data_sets"]:
        d = ds["directory"]
        (out / d).mkdir(parents=True, exist_ok=True)
        outputs[d] = {}
        for i, name in enumerate(names):
            shutil.copyfile(bundle / d / f"output_{i}.pb", out / d / f"{name}.pb")
            outputs[d][name] = f"{d}/{name}.pb"
    ep = {
        "cpu": "CPUExecutionProvider",
        "xnnpack": "XnnpackExecutionProvider",
        "nnapi": "NnapiExecutionProvider",
    }[a["ep"]]
    providers = [ep] if ep == "CPUExecutionProvider" else [ep, "CPUExecutionProvider"]
    why = "a stand-in observer measures nothing"
    obs = {
        "schema_version": 1,
        "target_id": a["target-id"],
        "environment": {
            "runtime_version": version,
            "providers_available": providers,
            "providers_registered": providers,
            "platform": "Linux",
            "runner": "standin-observer",
        },
        "outputs": outputs,
        "providers_requested": providers,
        "unmeasured": {"placement": why, "memory": why, "latency": why, "batch": why},
    }
    (out / "observation.json").write_text(json.dumps(obs))
    (out / "argv.json").write_text(json.dumps([sys.argv[0], *argv]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
