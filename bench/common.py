"""What every benchmark shares: paths, child processes, the versions and machine to print with a table."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

LATENCY_RUNS = 20
"""verify's default latency_runs (the config schema's default); the bare script times as many."""

VERSIONED = ("onnx-gate", "torch", "onnx", "onnxruntime", "polygraphy", "numpy", "click")


def onnx_gate() -> str:
    """The console script installed beside this interpreter."""
    here = Path(sys.executable).parent / "onnx-gate"
    found = str(here) if here.is_file() else shutil.which("onnx-gate")
    if not found:
        raise SystemExit(
            "onnx-gate is not installed in this environment: pip install -e '.[dev,export,bench]'"
        )
    return found


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.update(extra or {})
    return env


def check_call(argv: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: Path | None = None) -> None:
    done = subprocess.run(
        list(argv), env=child_env(env), cwd=cwd, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        tail = (done.stdout + done.stderr)[-3000:]
        raise SystemExit(f"{' '.join(argv[:3])} … exited {done.returncode}:\n{tail}")


def output(argv: Sequence[str], *, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), env=child_env(env), capture_output=True, text=True, check=False)


def version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_lines() -> list[str]:
    """The environment a table was measured in, as Markdown list items."""
    versions = ", ".join(f"{d} {version(d)}" for d in VERSIONED)
    return [
        f"- Python {platform.python_version()} ({platform.platform()})",
        f"- {versions}",
        f"- CPU: {cpu_model()}, {os.cpu_count()} logical core(s) (shared with other work while measured)",
    ]


def du_mb(path: Path) -> float:
    """Disk usage of a directory tree in MiB (blocks actually allocated, as `du` counts them)."""
    total = 0
    seen: set[tuple[int, int]] = set()
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                st = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            key = (st.st_dev, st.st_ino)
            if key in seen:
                continue
            seen.add(key)
            total += st.st_blocks * 512
    return total / (1 << 20)


def venv(path: Path, requirements: list[str], uv: str | None) -> Path:
    """A virtual environment at ``path`` holding ``requirements`` (compiled), made once and kept."""
    if not (path / ".done").is_file():
        python = str(path / "bin" / "python")
        if uv:
            check_call([uv, "venv", "--quiet", "--python", sys.executable, str(path)])
            check_call(
                [uv, "pip", "install", "--quiet", "--compile-bytecode", "--python", python, *requirements]
            )
        else:
            check_call([sys.executable, "-m", "venv", str(path)])
            check_call([python, "-m", "pip", "install", "-q", *requirements])
        (path / ".done").write_text("")
    return path
