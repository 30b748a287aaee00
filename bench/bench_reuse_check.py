"""What the plan job spends checking the records of what the base's exports read, on the many-models
repository (tests/e2e/many_models.py: DigitNet, MiniLM with its weights a package, an ONNX-only
scorer).

``python -m bench.bench_reuse_check [--repeats 20]``

The repository's bundles are exported once (each export child records what it read); a baseline is
made of one result per target carrying its bundle's export finding (the record), and the plan of
the same commit. Then, ``--repeats`` times, the plan's reuse step
(ci_onnx.orchestration.reuse.unchanged: every recorded file hashed, every recorded version read) is
timed alone, and so is the whole ``onnx-gate plan --baseline DIR`` command in a fresh process. Prints
the medians and how much the records name.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ci_onnx import plan as planning
from ci_onnx.config import cascade
from ci_onnx.contracts.bundle import read_manifest
from ci_onnx.contracts.results import write_result
from ci_onnx.orchestration import reuse
from ci_onnx.report import baseline
from ci_onnx.verify import judge
from tests.conftest import FakeIndex
from tests.e2e import many_models
from tests.reuse import layouts


def make_base(repo: Path, base_dir: Path) -> tuple[list[cascade.Config], planning.Plan]:
    config = repo / "onnx-gate.yml"
    args = [
        sys.executable,
        "-m",
        "ci_onnx",
        "export",
        "--config",
        str(config),
        "--out",
        str(repo.parent / "bundles"),
    ]
    subprocess.run(args, check=False, capture_output=True, timeout=3600)
    cfgs = cascade.load_all(config)
    index = FakeIndex({"onnxruntime": [many_models.RUNTIME]})
    the_plan = reuse.fingerprinted(planning.expand(cfgs, index), cfgs)
    for t in the_plan.targets:
        manifest = read_manifest(repo.parent / "bundles" / t.bundle_key)
        write_result(base_dir / "results", judge.result(t, manifest, list(manifest.findings)))
    (base_dir / "plan.json").write_text(planning.to_json(the_plan))
    baseline.write_meta(base_dir, "0" * 40, {})
    return cfgs, the_plan


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_reuse_check")
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        repo, base_dir = Path(tmp) / "repo", Path(tmp) / "base"
        layouts.write(repo, many_models.files())
        (repo / ".git").mkdir()
        cfgs, the_plan = make_base(repo, base_dir)
        base = baseline.load(base_dir)
        files = {f for records in base.records.values() for r in records for f in r.files}
        dists = {d for records in base.records.values() for r in records for d in r.distributions}
        check, whole = [], []
        for _ in range(args.repeats):
            started = time.perf_counter()
            head = reuse.unchanged(the_plan, base, cfgs)
            check.append(time.perf_counter() - started)
            started = time.perf_counter()
            command = [sys.executable, "-m", "ci_onnx", "plan", "--config", str(repo / "onnx-gate.yml")]
            done = subprocess.run(
                [*command, "--baseline", str(base_dir)], check=True, capture_output=True, text=True
            )
            whole.append(time.perf_counter() - started)
    unchanged = [m.id for m in head.models if m.unchanged_since]
    said = sum(": unchanged since " in line for line in done.stdout.splitlines())
    print(f"models: {len(head.models)}, unchanged: {len(unchanged)} ({', '.join(unchanged)})")
    print(f"the records name {len(files)} file(s) of the repository and {len(dists)} distribution(s)")
    n = args.repeats
    print(f"checking the records (reuse.unchanged), median of {n}: {statistics.median(check) * 1000:.1f} ms")
    print(f"onnx-gate plan --baseline DIR, a fresh process, median of {n}: {statistics.median(whole):.2f} s")
    print(f"  it said 'unchanged since' for {said} model(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
