"""ONNX's backend node tests through the ONNX-only gate, against onnxruntime's own ground truth.

    python -m tests.corpus.backend [--only GLOB] [--cache DIR] [--table tests/corpus/BACKEND.md]

The cases (model.onnx + test_data_set_N/) ship in the onnx wheel up to 1.22 under
onnx/backend/test/data/node; the script fetches that wheel once with pip into a cache directory and
reads the cases from it (they are not in this repository). Each case is

- gated in this process, as a user with an ONNX file would gate it: an onnx-gate.yml in ONNX-only
  mode (the case's tolerances, no batch sizes), the export stage's bundle, the onnxruntime runner's
  observation, the judge's verdict;
- run by a plain loop on onnxruntime CPU whose outputs are compared with onnx's backend runner's rule
  (shapes and dtypes equal, strings exactly, np.testing.assert_allclose at the case's rtol/atol,
  bfloat16 at two ULPs): the ground truth, computed here, not by the gate.

It prints agreement, false passes (the gate passed what onnxruntime gets wrong), false fails and the
disagreements by cause, and writes the table.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import fnmatch
import json
import shutil
import sys
import tempfile
import time
import traceback
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

ONNX_WITH_DATA = "1.22.0"
NODE = "onnx/backend/test/data/node/"
DEFAULT_CACHE = Path.home() / ".cache" / "onnx-gate" / "corpus"
NUMPY_TYPES = {
    "float", "double", "float16", "bool", "string", "complex64", "complex128",
    *(f"{u}int{b}" for u in ("", "u") for b in (8, 16, 32, 64)),
}  # fmt: skip
RTOL, ATOL = 1e-3, 1e-7  # onnx's backend loader's defaults; a case's data.json may override them


def node_cases(cache: Path) -> Path:
    """The node test cases, extracted once from the onnx wheel (downloaded once with pip)."""
    root = cache / f"onnx-{ONNX_WITH_DATA}-node"
    if (root / ".complete").is_file():
        return root
    wheels = sorted(cache.glob(f"onnx-{ONNX_WITH_DATA}-*.whl"))
    if not wheels:
        from ci_onnx.contracts import proc

        cache.mkdir(parents=True, exist_ok=True)
        argv = [
            sys.executable,
            "-m",
            "pip",
            "download",
            f"onnx=={ONNX_WITH_DATA}",
            "--no-deps",
            "-d",
            str(cache),
        ]
        done = proc.run(argv, timeout=600, env=None, what="pip download")
        if not done.ok:
            raise SystemExit(f"could not download onnx {ONNX_WITH_DATA}: {done.describe_failure()}")
        wheels = sorted(cache.glob(f"onnx-{ONNX_WITH_DATA}-*.whl"))
    with zipfile.ZipFile(wheels[0]) as z:
        for name in z.namelist():
            if name.startswith(NODE) and not name.endswith("/"):
                dest = root / name[len(NODE) :]
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(z.read(name))
    (root / ".complete").write_text("")
    return root


def tolerances(case: Path) -> tuple[float, float]:
    data = case / "data.json"
    if data.is_file():
        d = json.loads(data.read_text())
        return float(d.get("rtol", RTOL)), float(d.get("atol", ATOL))
    return RTOL, ATOL


# Ground truth: a plain loop on onnxruntime, judged by onnx's backend runner's rule.


def _load_proto(path: Path, tp: Any) -> Any:
    import onnx
    from onnx import numpy_helper

    data = path.read_bytes()
    if tp.HasField("sequence_type"):
        s = onnx.SequenceProto()
        s.ParseFromString(data)
        return numpy_helper.to_list(s)
    if tp.HasField("optional_type"):
        o = onnx.OptionalProto()
        o.ParseFromString(data)
        return numpy_helper.to_optional(o)
    if tp.HasField("map_type"):
        m = onnx.MapProto()
        m.ParseFromString(data)
        return numpy_helper.to_dict(m)
    t = onnx.TensorProto()
    t.ParseFromString(data)
    return numpy_helper.to_array(t)


def _feed(value: Any, ort: Any) -> Any:
    """What onnxruntime accepts: ml_dtypes arrays as OrtValues built from onnx's own raw bytes."""
    from onnx import numpy_helper

    if isinstance(value, list):
        return [_feed(v, ort) for v in value]
    if isinstance(value, dict):  # onnx reads string keys as bytes; onnxruntime takes str
        return {k.decode() if isinstance(k, bytes) else k: np.asarray(v).item() for k, v in value.items()}
    if isinstance(value, np.ndarray) and _narrow(value.dtype):
        tp = numpy_helper.from_array(value)
        code = tp.data_type
        raw = np.frombuffer(tp.raw_data, dtype=np.uint8)
        if value.dtype.itemsize == 2:
            return ort.OrtValue.ortvalue_from_numpy_with_onnx_type(value.view(np.uint16), code)
        holder = np.zeros(max(value.size, raw.size), dtype=np.uint8)
        holder[: raw.size] = raw
        return ort.OrtValue.ortvalue_from_numpy_with_onnx_type(
            holder[: value.size].reshape(value.shape), code
        )
    return value


def _narrow(dtype: np.dtype) -> bool:
    """An ml_dtypes type (bfloat16, float8, int4 …): numpy, and so onnxruntime's run(), lacks it."""
    from onnx import helper

    return dtype.kind not in "OUS" and helper.np_dtype_to_tensor_dtype(dtype) >= 16


def _fetch(v: Any) -> Any:
    """An OrtValue as onnx reads it: the buffer's bytes as a TensorProto's raw_data, then numpy_helper."""
    import ctypes

    from onnx import helper, numpy_helper

    name = v.data_type()[len("tensor(") : -1]
    if name in NUMPY_TYPES:
        return v.numpy()
    codes = {
        helper.tensor_dtype_to_string(c)[len("TensorProto.") :].lower(): c
        for c in helper.get_all_tensor_dtypes()
    }
    raw = ctypes.string_at(v.data_ptr(), v.tensor_size_in_bytes())
    return numpy_helper.to_array(helper.make_tensor("", codes[name], v.shape(), raw, raw=True))


def ground_truth(case: Path) -> tuple[bool, str]:
    """Whether onnxruntime CPU passes the case by onnx's rule, and why not."""
    import onnx
    import onnxruntime as ort

    model = onnx.load(str(case / "model.onnx"))
    rtol, atol = tolerances(case)
    so = ort.SessionOptions()
    so.log_severity_level = 4
    try:
        sess = ort.InferenceSession(str(case / "model.onnx"), so, providers=["CPUExecutionProvider"])
    except Exception as exc:
        return False, f"load: {_line(exc)}"
    outs = sess.get_outputs()
    exotic = any(o.type.startswith("tensor(") and o.type[7:-1] not in NUMPY_TYPES for o in outs)
    weights = {i.name for i in model.graph.initializer}
    graph_inputs = [i for i in model.graph.input if i.name not in weights]
    for ds in sorted(case.glob("test_data_set_*")):
        feeds = {}
        for i, vi in enumerate(graph_inputs):
            f = ds / f"input_{i}.pb"
            if f.is_file():
                feeds[vi.name] = _feed(_load_proto(f, vi.type), ort)
        refs = [
            _load_proto(ds / f"output_{i}.pb", o.type)
            for i, o in enumerate(model.graph.output)
            if (ds / f"output_{i}.pb").is_file()
        ]
        try:
            if exotic:
                ins = {
                    k: v if isinstance(v, ort.OrtValue) else ort.OrtValue.ortvalue_from_numpy(np.asarray(v))
                    for k, v in feeds.items()
                }
                got = [_fetch(v) for v in sess.run_with_ort_values([o.name for o in outs], ins)]
            else:
                got = sess.run(None, feeds)
        except Exception as exc:
            return False, f"run: {_line(exc)}"
        try:
            _assert_similar(refs, list(got)[: len(refs)], rtol, atol)
        except (AssertionError, TypeError, ValueError) as exc:
            return False, f"compare: {_line(exc)}"
    return True, ""


def _assert_similar(refs: list[Any], outs: list[Any], rtol: float, atol: float) -> None:
    """onnx.backend.test.runner.Runner.assert_similar_outputs, with empty optionals and maps as values."""
    np.testing.assert_equal(len(outs), len(refs))
    for out, ref in zip(outs, refs, strict=True):
        if ref is None or out is None:
            assert ref is None and out is None, f"optional: got {type(out)}, expected {type(ref)}"
        elif isinstance(ref, (list, tuple)):
            assert isinstance(out, (list, tuple)), f"got {type(out)} for a sequence"
            _assert_similar(list(ref), list(out), rtol, atol)
        elif isinstance(ref, dict):
            ref = {k.decode() if isinstance(k, bytes) else k: v for k, v in ref.items()}
            assert isinstance(out, dict) and set(out) == set(ref), "map keys differ"
            # onnxruntime returns a map's values as Python scalars: of the map's declared type
            got = [np.asarray(out[k], dtype=np.asarray(ref[k]).dtype) for k in ref]
            _assert_similar([ref[k] for k in ref], got, rtol, atol)
        else:
            out = np.asarray(out)
            np.testing.assert_array_equal(out.shape, ref.shape, err_msg="incorrect shape")
            if ref.dtype == object:
                np.testing.assert_array_equal(out, ref)
                continue
            np.testing.assert_equal(out.dtype, ref.dtype)
            r = rtol
            if ref.dtype.name == "bfloat16":
                r = max(rtol, 2**-6)
            if _narrow(ref.dtype):  # bfloat16, float8, int4 …: by decoded value
                out, ref = out.astype(np.float32), ref.astype(np.float32)
            np.testing.assert_allclose(out, ref, rtol=r, atol=atol)


# The gate, in this process.


@dataclasses.dataclass(frozen=True)
class Verdict:
    status: str  # passed / failed / error / expected / skipped, or "traceback"
    why: str
    checks: tuple[tuple[str, str, str], ...] = ()
    """(name, status, message) of each check, where the gate got that far."""


def gate(case: Path, work: Path, batch_sizes: tuple[int, ...] = ()) -> Verdict:
    import onnxruntime

    from ci_onnx import config, matrix
    from ci_onnx.contracts.target import Target
    from ci_onnx.contracts.verify_options import VerifyOptions
    from ci_onnx.export import onnx_only
    from ci_onnx.observer import ort as runner
    from ci_onnx.verify import evidence, judge

    rtol, atol = tolerances(case)
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    yml = work / "onnx-gate.yml"
    yml.write_text(
        "version: 1\n"
        f"model: {{onnx: {case / 'model.onnx'}, test_data: {case}}}\n"
        f"verify: {{tolerance: {{atol: {atol!r}, rtol: {rtol!r}}}, batch_sizes: {list(batch_sizes)}}}\n"
        f"targets: {{runtimes: ['{onnxruntime.__version__}'], providers: [cpu]}}\n"
    )
    try:
        cfg = config.load(yml)
        bundle = work / "bundle"
        manifest = onnx_only.make_bundle(cfg, bundle)
        target = Target(onnxruntime.__version__, "cpu", manifest.opset, "onnx")
        expected = matrix.caps_for(target.runtime).cannot_load(manifest.opset, manifest.ir_version)
        if manifest.export_failed:
            blocking = next(f for f in manifest.findings if f.status.failing)
            return Verdict("failed", f"{blocking.name}: {blocking.message}")
        obs_dir = work / "obs"
        obs_dir.mkdir()
        obs = runner.observe(
            bundle, target, runner.Options(ep="CPUExecutionProvider", placement="profile"), obs_dir
        )
        result = judge.judge(
            target, manifest, obs, evidence.load(manifest, obs, bundle, obs_dir), VerifyOptions(), expected
        )
        checks = tuple((c.name, c.status.value, c.message) for c in result.checks)
        return Verdict(result.status.value, result.summary, checks)
    except Exception as exc:  # a user error is a verdict; anything else is a traceback: a gate bug
        from ci_onnx.contracts.errors import ConfigError

        if isinstance(exc, ConfigError):
            return Verdict("error", f"config: {exc}")
        return Verdict("traceback", "".join(traceback.format_exception(exc))[-1500:])


def _line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:300] or type(exc).__name__


EXPLAINED = {
    "train-mode": "the gate is stricter by design: a graph that computes in training mode "
    "(BatchNormalization training_mode=1) is an export pitfall in a served model, so the train-mode "
    "check fails it although onnxruntime computes what the test data says",
    "checker": "the gate is stricter by design: onnx.checker (full_check, with shape inference) rejects "
    "the model, which onnxruntime still runs",
}
"""Why each kind of disagreement that remains is the gate's intent, by the check that caused it."""


def explanation(v: Verdict) -> str:
    return next((text for check, text in EXPLAINED.items() if v.why.startswith(f"{check}:")), "")


def cause(truth_ok: bool, truth_why: str, v: Verdict) -> str:
    """A short, stable label for a disagreement (or for an agreed failure)."""
    text = truth_why if not truth_ok else v.why
    for key, label in (
        ("NOT_IMPLEMENTED", "onnxruntime has no kernel"),
        ("MLDataType", "element type not supported by onnxruntime"),
        ("not supported", "a feature onnxruntime does not support"),
        ("Unsupported model IR version", "IR version too new"),
        ("opset", "opset"),
        ("compare:", "outputs differ"),
        ("out of tolerance", "outputs differ"),
        ("run:", "run failed"),
        ("load:", "load failed"),
    ):
        if key in text:
            return label
    return text[:80]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.corpus.backend", description=__doc__)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--only", action="append", default=[], help="glob(s) over case names")
    parser.add_argument("--table", type=Path, help="write the Markdown table here")
    parser.add_argument("--json", type=Path, help="write every case's verdicts here")
    args = parser.parse_args(argv)
    root = node_cases(args.cache)
    cases = sorted(p for p in root.iterdir() if (p / "model.onnx").is_file())
    if args.only:
        cases = [c for c in cases if any(fnmatch.fnmatchcase(c.name, g) for g in args.only)]
    rows = []
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="onnx-gate-corpus-") as tmp:
        for i, case in enumerate(cases):
            ok, why = ground_truth(case)
            v = gate(case, Path(tmp) / "case")
            rows.append(
                {"case": case.name, "truth": ok, "truth_why": why, "gate": v.status, "gate_why": v.why}
            )
            if (i + 1) % 200 == 0:
                print(f"{i + 1}/{len(cases)} in {time.monotonic() - t0:.0f} s", file=sys.stderr)
    seconds = time.monotonic() - t0
    summary = summarise(rows, seconds)
    print(summary)
    if args.table:
        args.table.write_text(summary)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


def summarise(rows: list[dict[str, Any]], seconds: float) -> str:
    n = len(rows)
    tracebacks = [r for r in rows if r["gate"] == "traceback"]
    false_pass = [r for r in rows if r["gate"] == "passed" and not r["truth"]]
    false_fail = [r for r in rows if r["gate"] != "passed" and r["truth"]]
    agree = n - len(false_pass) - len(false_fail)
    by_cause = collections.Counter(
        cause(r["truth"], r["truth_why"], Verdict(r["gate"], r["gate_why"])) for r in false_fail + false_pass
    )
    import onnxruntime

    lines = [
        "# ONNX backend node tests: the ONNX-only gate against onnxruntime's ground truth",
        "",
        f"onnx {ONNX_WITH_DATA} test data, onnxruntime {onnxruntime.__version__} CPU; "
        f"written by `python -m tests.corpus.backend --table tests/corpus/BACKEND.md` in {seconds:.0f} s.",
        "",
        "| figure | cases |",
        "|---|---:|",
        f"| cases | {n} |",
        f"| onnxruntime passes (ground truth) | {sum(r['truth'] for r in rows)} |",
        f"| gate passes | {sum(r['gate'] == 'passed' for r in rows)} |",
        f"| agreement | {agree} ({agree / n:.2%}) |" if n else "| agreement | 0 |",
        f"| false passes | {len(false_pass)} |",
        f"| false fails | {len(false_fail)} |",
        f"| tracebacks | {len(tracebacks)} |",
        "",
        "Gate verdicts: "
        + ", ".join(f"{k} {v}" for k, v in sorted(collections.Counter(r["gate"] for r in rows).items())),
        "",
    ]
    agreed = [r for r in rows if not r["truth"] and r["gate"] != "passed"]
    if agreed:
        lines += [
            "## What onnxruntime gets wrong, and the gate with it",
            "",
            "| ground truth's cause | gate verdicts | cases | examples |",
            "|---|---|---:|---|",
        ]
        groups: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
        for r in agreed:
            groups[cause(False, r["truth_why"], Verdict(r["gate"], r["gate_why"]))].append(r)
        for c, members in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            statuses = collections.Counter(r["gate"] for r in members)
            verdicts = ", ".join(f"{k} {v}" for k, v in sorted(statuses.items()))
            examples = ", ".join(r["case"] for r in members[:3])
            lines.append(f"| {c} | {verdicts} | {len(members)} | {examples} |")
        lines.append("")
    if by_cause:
        lines += [
            "## Disagreements by cause",
            "",
            "| cause | cases | examples | explained |",
            "|---|---:|---|---|",
        ]
        for c, k in by_cause.most_common():
            ex = [
                r["case"]
                for r in false_fail + false_pass
                if cause(r["truth"], r["truth_why"], Verdict(r["gate"], r["gate_why"])) == c
            ][:3]
            why = next(
                (
                    explanation(Verdict(r["gate"], r["gate_why"]))
                    for r in false_fail + false_pass
                    if r["case"] == ex[0]
                ),
                "",
            )
            lines.append(f"| {c} | {k} | {', '.join(ex)} | {why or 'NOT EXPLAINED'} |")
        lines.append("")
        lines += ["## Each disagreement", "", "| case | ground truth | gate |", "|---|---|---|"]
        for r in false_fail + false_pass:
            lines.append(
                f"| {r['case']} | {'pass' if r['truth'] else r['truth_why'][:120]} | {r['gate']}: {r['gate_why'][:160].replace('|', '/')} |"
            )
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
