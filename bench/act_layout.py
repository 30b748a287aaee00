"""The example's pull-request gate under act, one verify job per environment and the exports where
the plan puts them: its jobs, each job's wall time, and every target's verdict against `onnx-gate
run` on the same commit.

    python -m bench.act_layout [--work DIR] [--out bench/ACT_LAYOUT.md]

The scenario is tests/e2e/test_workflows_act.py's (the example's onnx-gate.yml, its newest releases
pinned; act in host mode with the stand-ins of tests/act, two jobs at a time; the jobs whose
target needs another runtime than this host's verify in the environment `onnx-gate run` builds).
A job's wall time runs from its first line in act's log to its last; on this host a job has no
runner to start and no image to pull, and the runtime environments are those an earlier run built
(WORK/act-envs; a first run spends about half a minute per environment making them), so these are
the jobs' own steps, not GitHub's figures.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from bench import common

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    from tests.e2e import test_workflows_act as scenario

    parser = argparse.ArgumentParser(prog="python -m bench.act_layout", description=__doc__)
    parser.add_argument("--work", type=Path, default=HERE / ".work")
    parser.add_argument("--out", type=Path, default=HERE / "ACT_LAYOUT.md")
    args = parser.parse_args(argv)
    env_cache = args.work.resolve() / "act-envs"
    env_cache.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=args.work) as tmp:
        run, _github, (local_code, local) = scenario._gate(Path(tmp), scenario.example_files(), env_cache)
        ci = run.statuses()  # read from the run's artifacts, before they go
        layout = scenario._export_layout(run)
    took = time.perf_counter() - started
    walls = {name: s for name, s in run.wall_times().items() if name in run.jobs()}
    lines = [
        "# The example's gate under act: one verify job per environment, the exports in the plan job",
        "",
        f"Measured with `python -m bench.act_layout` ({took:.0f} s, act and then `onnx-gate run`).",
        "What it runs and what the wall times mean: the docstring of bench/act_layout.py.",
        "",
        *common.machine_lines(),
        "",
        f"{len(walls)} jobs (the layout before: one export job per bundle and one verify job per target, "
        f"{1 + len(layout.bundles) + len(local) + 1} for these cells).",
        "",
        f"The plan job's estimate (`ci.export: auto`): {layout.describe().strip()}.",
        "",
        "| job | wall time | succeeded |",
        "|---|---|---|",
    ]
    jobs = run.jobs()
    for name, seconds in walls.items():
        lines.append(f"| {name} | {seconds:.1f} s | {'yes' if jobs[name] else 'no'} |")
    lines += ["", "| target | in CI (act) | `onnx-gate run` | equal |", "|---|---|---|---|"]
    for target in sorted(set(ci) | set(local)):
        a, b = ci.get(target, "missing"), local.get(target, "missing")
        lines.append(f"| `{target}` | {a} | {b} | {'yes' if a == b else '**no**'} |")
    same = ci == local and (run.code == 0) == (local_code == 0)
    lines += ["", f"Every target's verdict equal to `onnx-gate run`'s: **{'yes' if same else 'no'}**."]
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
