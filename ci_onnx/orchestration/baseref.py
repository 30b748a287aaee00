"""`onnx-gate run --baseline-ref REF`: the base commit, run with the same plan in a temporary worktree.

The base commit's onnx-gate.yml (at the same path) says what the model was there: its factory,
weights, samples, tolerances and served batch sizes. The matrix and the measuring settings are the
head's (``targets``, the opsets, exporters and precisions, ``verify.latency_runs`` and
``serving_figures``), so both sides plan the same targets and time them alike. The export cache
keys bundles by content, not path, so a model the change did not touch is not exported again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from ci_onnx.config import Config, cascade
from ci_onnx.contracts import proc
from ci_onnx.contracts.errors import EnvironmentProblem, UsageError

GIT_TIMEOUT_S = 120.0


def _git(
    args: list[str], cwd: Path, env: Mapping[str, str], what: str, *, check: bool = False
) -> proc.Completed:
    return proc.run(["git", *args], cwd=cwd, env=env, timeout=GIT_TIMEOUT_S, what=what, check=check)


def commit_of(directory: Path, env: Mapping[str, str]) -> str:
    """HEAD of the git checkout holding ``directory``; "" outside one (or without git)."""
    try:
        done = _git(["rev-parse", "HEAD"], directory, env, "git rev-parse HEAD")
    except EnvironmentProblem:  # no git at all: the run still works, it just cannot name its commit
        return ""
    return done.stdout.strip() if done.ok else ""


def resolve(ref: str, config_path: Path, env: Mapping[str, str]) -> tuple[Path, str]:
    """The checkout's top directory and the commit ``ref`` names; one line when either is not there."""
    where = config_path.resolve().parent
    top = _git(["rev-parse", "--show-toplevel"], where, env, "git rev-parse --show-toplevel")
    if not top.ok:
        raise UsageError(
            f"--baseline-ref {ref}: {config_path} is not in a git checkout; use --baseline DIR "
            "(the --out of a run of the base commit) instead"
        )
    root = Path(top.stdout.strip())
    found = _git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], root, env, f"git rev-parse {ref}")
    if not found.ok:
        raise UsageError(
            f"--baseline-ref {ref}: no such commit in {root} (give a branch, a tag or a sha: main, HEAD~1)"
        )
    return root, found.stdout.strip()


@contextlib.contextmanager
def worktree(root: Path, sha: str, env: Mapping[str, str]) -> Iterator[Path]:
    """A detached worktree of ``sha``, removed (and unregistered) on the way out."""
    tmp = Path(tempfile.mkdtemp(prefix="onnx-gate-base-"))
    tree = tmp / "tree"
    _git(
        ["worktree", "add", "--detach", "--quiet", str(tree), sha], root, env, "git worktree add", check=True
    )
    try:
        yield tree
    finally:
        _git(["worktree", "remove", "--force", str(tree)], root, env, "git worktree remove")
        shutil.rmtree(tmp, ignore_errors=True)
        _git(["worktree", "prune"], root, env, "git worktree prune")


def base_configs(heads: Sequence[Config], root: Path, tree: Path, ref: str) -> tuple[Config, ...]:
    """The base commit's models that the head has too, each with the head's matrix and measuring
    settings (a model the head added is new there; one it removed is not run), and its own gate
    settings and ledger: the base's policy judges the head (ci_onnx/report/policy.py)."""
    relative = heads[0].path.resolve().relative_to(root)
    path = tree / relative
    if not path.is_file():
        raise UsageError(
            f"--baseline-ref {ref}: {relative} does not exist at that commit, so there is nothing to "
            "compare with; the head is judged absolutely without --baseline-ref"
        )
    by_id = {h.model.id: h for h in heads}
    return tuple(_like(by_id[b.model.id], b) for b in cascade.load_all(path) if b.model.id in by_id)


def _like(head: Config, base: Config) -> Config:
    return dataclasses.replace(
        base,
        targets=head.targets,
        export=dataclasses.replace(
            base.export,
            opsets=head.export.opsets,
            exporters=head.export.exporters,
            precisions=head.export.precisions,
        ),
        verify=dataclasses.replace(
            base.verify,
            latency_runs=head.verify.latency_runs,
            serving_figures=head.verify.serving_figures,
        ),
    )
