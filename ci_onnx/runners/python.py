"""The Python runner kind: onnxruntime (and its flavours) from PyPI, in one cached environment each.

Provisioning is ci_onnx.host.envs (uv or venv + pip); the observer is ``python -m ci_onnx.observer.ort``,
run with the environment's interpreter and a PYTHONPATH that holds only the ci_onnx package (a link
to it in a temporary directory), so the environment needs nothing but numpy and its onnxruntime.
:meth:`PythonRunner.launch_many` observes several targets of one environment in one such process.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

import ci_onnx
from ci_onnx import matrix
from ci_onnx.contracts import proc, serde
from ci_onnx.contracts.results import Observation
from ci_onnx.contracts.target import Target
from ci_onnx.runners import batch, session
from ci_onnx.runners.base import Launch, Provisioning, RunnerEnv, collect

KIND = "python"
OBSERVER = "ci_onnx.observer.ort"


def from_interpreter(python: str) -> RunnerEnv:
    """An environment someone else made: the interpreter given by ``onnx-gate verify --python``."""
    return RunnerEnv(KIND, "", Path(python).parent.parent, python)


def holds(python: str, target: Target, environ: Mapping[str, str]) -> bool:
    """Whether ``python``'s environment holds the onnxruntime package and release ``target`` asks
    for: read from its installed metadata in a child (nothing is imported), not from this process,
    which may run in another environment."""
    package = matrix.runners()[KIND].package_for(target.provider)
    probe = f"import importlib.metadata as m; print(m.version({package!r}))"
    done = proc.run([python, "-c", probe], timeout=60, env=environ, what=f"{python}: {package}'s version")
    return done.ok and done.stdout.strip() == target.runtime


class PythonRunner:
    kind = KIND

    def provision(self, release: str, provider: str, how: Provisioning) -> RunnerEnv:
        from ci_onnx.host import envs  # not for verify's parent with an interpreter given (--python)

        package = matrix.runners()[KIND].package_for(provider)
        env = envs.ensure(package, release, how.cache_dir, uv=how.uv, environ=how.environ)
        return RunnerEnv(KIND, release, env.path, str(env.python), package)

    def launch(self, env: RunnerEnv, x: Launch, *, base_env: Mapping[str, str]) -> proc.Completed:
        argv = [env.program, "-m", OBSERVER, *observer_args(x, env.path)]
        with package_path() as path:
            env_vars = {**base_env, "PYTHONPATH": path, "PYTHONDONTWRITEBYTECODE": "1"}
            return proc.run(argv, timeout=x.options.timeout_s, env=env_vars, what=f"{x.target.id} runner")

    @contextlib.contextmanager
    def early(self, env: RunnerEnv, *, base_env: Mapping[str, str]) -> Iterator[batch.Early]:
        """A ``--jobs -`` child started now, to be handed to :meth:`launch_many` (it imports numpy
        and onnxruntime meanwhile); ended on the way out if it was never used."""
        with package_path() as path:
            env_vars = {**base_env, "PYTHONPATH": path, "PYTHONDONTWRITEBYTECODE": "1"}
            started = batch.Early((env.program, "-m", OBSERVER), env_vars, _what(env), Path(path))
            try:
                yield started
            finally:
                started.close()

    def launch_many(
        self,
        env: RunnerEnv,
        launches: Sequence[Launch],
        *,
        base_env: Mapping[str, str],
        on_done: Callable[[int, proc.Completed], None] | None = None,
        early: batch.Early | None = None,
    ) -> list[proc.Completed]:
        """Every launch in one ``--jobs`` child (``early``'s where given; a fresh one after a crash or
        a hang), each one's Completed as its own :meth:`launch` would give it. A cell whose preset
        sets state of the whole process (session.PROCESS_WIDE) runs in a process of its own."""
        alone = [
            i
            for i, x in enumerate(launches)
            if session.process_wide(x.target.session_options, x.options.session_presets)
        ]
        if alone:
            return self._apart(env, launches, alone, base_env=base_env, on_done=on_done, early=early)
        jobs = [
            batch.Job(tuple(observer_args(x, env.path)), x.options.timeout_s, f"{x.target.id} runner")
            for x in launches
        ]
        program = (env.program, "-m", OBSERVER)
        if early is not None:
            return batch.run_jobs(
                program,
                jobs,
                workdir=early.workdir,
                env=early.env,
                on_done=on_done,
                what=_what(env),
                early=early,
            )
        with package_path() as path:
            env_vars = {**base_env, "PYTHONPATH": path, "PYTHONDONTWRITEBYTECODE": "1"}
            return batch.run_jobs(
                program, jobs, workdir=Path(path), env=env_vars, on_done=on_done, what=_what(env)
            )

    def _apart(
        self,
        env: RunnerEnv,
        launches: Sequence[Launch],
        alone: Sequence[int],
        *,
        base_env: Mapping[str, str],
        on_done: Callable[[int, proc.Completed], None] | None,
        early: batch.Early | None,
    ) -> list[proc.Completed]:
        """The launches at ``alone`` each in a process of its own, the rest batched as usual."""
        done: dict[int, proc.Completed] = {}

        def heard(i: int, completed: proc.Completed) -> None:
            done[i] = completed
            if on_done is not None:
                on_done(i, completed)

        rest = [i for i in range(len(launches)) if i not in alone]
        if rest:
            self.launch_many(
                env, [launches[i] for i in rest], base_env=base_env,
                on_done=lambda j, c: heard(rest[j], c), early=early,
            )  # fmt: skip
        for i in alone:
            heard(i, self.launch(env, launches[i], base_env=base_env))
        return [done[i] for i in range(len(launches))]

    def collect(self, out_dir: Path) -> Observation:
        return collect(KIND, out_dir)  # the observer writes its placement itself


def _what(env: RunnerEnv) -> str:
    return f"{env.package or 'onnxruntime'} {env.release} runner".replace("  ", " ").strip()


def observer_args(x: Launch, env_path: Path) -> list[str]:
    """The observer's arguments for one target: the same for a process of its own and a batch job."""
    args = [
        "--bundle", str(x.bundle.resolve()),
        "--target-json", json.dumps(serde.to_json(x.target)),
        "--ep", x.ep,
        "--out", str(x.out_dir.resolve()),
        "--latency-runs", str(x.options.latency_runs),
    ]  # fmt: skip
    options = x.options
    if options.strict_fallback:
        args.append("--strict-fallback")
    args += session.runner_args(
        x.target.session_options, options.session_presets, env_path if options.serving_figures else None
    )
    if not options.serving_figures:  # verify.serving_figures: false; the checks say why they are skipped
        args += ["--no-cold-start", "--no-opt-cache"]
    paired = Path(options.paired_bundles) / x.target.bundle_key if options.paired_bundles else None
    if paired is not None and (paired / "manifest.json").is_file() and not same_files(x.bundle, paired):
        args += ["--paired-bundle", str(paired.resolve())]
    return args


def same_files(head: Path, base: Path) -> bool:
    """Whether two bundles hold the same files byte for byte (their manifests' sha256 of each): the
    same model and inputs need no side-by-side timing, the report does not compare them."""
    try:
        files = [json.loads((d / "manifest.json").read_text())["files"] for d in (head, base)]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return bool(files[0]) and files[0] == files[1]


@contextlib.contextmanager
def package_path() -> Iterator[str]:
    """A temporary directory holding only a link to the ci_onnx package: the child's PYTHONPATH."""
    with tempfile.TemporaryDirectory(prefix="onnx-gate-runner-") as tmp:
        (Path(tmp) / "ci_onnx").symlink_to(Path(ci_onnx.__file__).parent, target_is_directory=True)
        yield tmp


RUNNER = PythonRunner()
