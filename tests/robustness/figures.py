"""The robustness suite's figures, counted rather than asserted: ``python -m tests.robustness.figures``.

cases tried, tracebacks, results lost, duplicated comments or check runs, token sightings, cases
whose exit code or message differed from the corpus, sanitizer reports (and driver crashes and
C-against-Python disagreements) over the native parsers' mutation session, fork payloads rendered
as more than text, and runner processes left alive after a signal to onnx-gate. The tests assert
each is zero; this prints them. ``ONNX_GATE_SANITIZER_S`` sets the mutation session's seconds.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import sys
import tempfile
from pathlib import Path

from click.testing import CliRunner

from ci_onnx.cli import cli
from tests.fakegithub import server
from tests.robustness import corpus, injection, sanitized, test_faults, test_signals
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
        "sanitizer_cases": 0,
        "sanitizer_reports": 0,
        "codec_disagreements": 0,
        "injection_cases": 0,
        "injections_rendered": 0,
        "orphaned_processes": 0,
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
        found = sanitized.session(root / "sanitized", float(os.environ.get("ONNX_GATE_SANITIZER_S", "8")))
        figures["sanitizer_cases"] = found.cases
        figures["sanitizer_reports"] = found.sanitizer_reports + found.driver_failures
        figures["codec_disagreements"] = len(found.disagreements)
        for n, case in enumerate(injection.cases()):
            d = root / f"i{n}"
            d.mkdir()
            out = injection.render_case(case, d)
            figures["injection_cases"] += 1
            figures["tracebacks"] += bool(out["traceback"])
            figures["injections_rendered"] += len(injection.rendered(out))
        for n, sig in enumerate((signal.SIGTERM, signal.SIGHUP, signal.SIGINT)):
            figures["cases"] += 1
            d = root / f"s{n}"
            d.mkdir()
            left, _, err = test_signals.orphans_after(sig, d, good)
            figures["orphaned_processes"] += left
            figures["tracebacks"] += "Traceback" in err
    print(json.dumps(figures, indent=1))
    return 0 if all(v == 0 for k, v in figures.items() if not k.endswith("cases")) else 1


if __name__ == "__main__":
    with contextlib.redirect_stderr(io.StringIO()):
        code = main()
    sys.exit(code)
