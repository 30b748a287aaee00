"""The robustness suite's figures, counted rather than asserted: ``python -m tests.robustness.figures``.

cases tried, tracebacks, results lost, duplicated comments or check runs, token sightings, and cases
whose exit code or message differed from the corpus. The tests assert each is zero; this prints them.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import tempfile
from pathlib import Path

from click.testing import CliRunner

from ci_onnx.cli import cli
from tests.fakegithub import server
from tests.robustness import corpus, test_faults
from tests.robustness.github_faults import FAULTS
from tests.robustness.test_corpus import PLANTED, TOKEN_NAMES, run_case


def main() -> int:
    from tests import bundles

    figures = {
        "cases": 0,
        "tracebacks": 0,
        "results_lost": 0,
        "duplicates": 0,
        "token_sightings": 0,
        "mismatches": 0,
    }
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        good = bundles.mlp_bundle(root / "good" / "bundle")
        for n, case in enumerate(corpus.all_cases()):
            d = root / f"c{n}"
            d.mkdir()
            outcome, _ = run_case(case, d, good)
            figures["cases"] += 1
            figures["tracebacks"] += outcome.traceback
            figures["token_sightings"] += len(outcome.token_seen)
            figures["mismatches"] += bool(outcome.problems)
        for fault in FAULTS:
            figures["cases"] += 1
            with server.running(lifetime_s=120) as fake:
                try:
                    infos, warns, comments, runs = test_faults.published(fake, fault)
                except Exception:
                    figures["tracebacks"] += 1
                    continue
            figures["duplicates"] += max(0, comments - max(1, fault.comments)) + max(0, runs - 1)
            figures["token_sightings"] += server.TOKEN in " ".join([*infos, *warns])
        target = "ort1.32.0-cpu-op17-onnx"
        for n, (body, _) in enumerate(test_faults.RUNNERS.values()):
            figures["cases"] += 1
            d = root / f"r{n}"
            d.mkdir()
            python = test_faults._fake_python(d, body)
            argv = ["verify", "--bundle", str(good), "--target", target, "--out", str(d / "out")]
            argv += ["--python", str(python), "--timeout", "1"]
            r = CliRunner().invoke(cli, argv, env={k: PLANTED for k in TOKEN_NAMES}, catch_exceptions=True)
            figures["tracebacks"] += "Traceback" in r.output or not isinstance(
                r.exception, (SystemExit, type(None))
            )
            written = (d / "out" / "results" / f"{target}.json", d / "out" / "junit" / f"{target}.xml")
            figures["results_lost"] += not all(p.is_file() for p in written)
            env_dump = d / "child-env.txt"
            figures["token_sightings"] += PLANTED in r.output + (
                env_dump.read_text() if env_dump.is_file() else ""
            )
    print(json.dumps(figures, indent=1))
    return 0 if all(v == 0 for k, v in figures.items() if k != "cases") else 1


if __name__ == "__main__":
    with contextlib.redirect_stderr(io.StringIO()):
        code = main()
    sys.exit(code)
