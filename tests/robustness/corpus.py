"""The bad-input corpus, as data: what an attacker or a clumsy user feeds the CLI, and what must come out.

Each :class:`Case` is a set of files, a command line, the exit code it must end with and the words its
one-line message must hold (the file, the key or the target). ``{d}`` in an argument is the case's
directory. The suite (test_corpus.py) runs every case through the CLI and also requires: no traceback,
an error message of exactly one line, and the planted token nowhere in the output.

Families: ``config`` (onnx-gate.yml through ``plan``), ``cli`` (options), ``report`` (result files,
plans, JUnit from other tools, event JSON), ``bundle`` (bundles refused by ``verify`` before the
runtime starts). Bundle cases that need a runtime to run are in test_bundles_e2e.py.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator
from typing import Any

PASS, FAIL, USAGE, INTERNAL = 0, 1, 2, 3
CONFIG = "onnx-gate.yml"


@dataclasses.dataclass(frozen=True)
class Case:
    id: str
    argv: tuple[str, ...]
    files: dict[str, bytes]
    exit_code: int
    says: tuple[str, ...]
    """Words the message must hold (for exit 2 or 3: the one ``onnx-gate: error:`` line)."""
    env: dict[str, str] = dataclasses.field(default_factory=dict)
    setup: str = ""
    """The name of an extra step in test_corpus.SETUPS (results, bundles), applied before the run."""


# --- onnx-gate.yml -----------------------------------------------------------------------------------

BASE: dict[str, Any] = {
    "version": 1,
    "model": {
        "factory": "net.py:build",
        "inputs": {"x": {"shape": ["batch", 8], "dtype": "float32"}},
        "outputs": ["logits"],
        "dynamic_axes": {"x": {"0": "batch"}},
    },
    "export": {"opsets": [17], "exporters": ["dynamo"], "timeout_s": 600},
    "verify": {
        "random_inputs": 4,
        "seed": 0,
        "tolerance": {"atol": 1e-4, "rtol": 1e-3},
        "decision": {"output": "logits", "top_k": 1},
        "batch_sizes": [1, 8],
        "timeout_s": 300,
        "latency_runs": 5,
    },
    "targets": {"runtimes": ["1.20.1"], "providers": ["cpu"]},
    "budgets": {"cpu_fallback": {"max_time_share": 0.05}},
}

_DELETE = object()


def _with(path: str, value: Any) -> dict[str, Any]:
    """BASE with the value at dotted ``path`` replaced (or removed, with _DELETE)."""
    doc = json.loads(json.dumps(BASE))
    node = doc
    keys = path.split(".")
    for k in keys[:-1]:
        node = node.setdefault(k, {})
    if value is _DELETE:
        node.pop(keys[-1], None)
    else:
        node[keys[-1]] = value
    return doc


def _yaml(doc: Any) -> bytes:
    """Block-style YAML (one key a line, so messages carry real line numbers), numbers as YAML writes them."""

    def scalar(v: Any) -> str:
        if isinstance(v, str) and v.startswith("!raw:"):
            return v.removeprefix("!raw:")
        return json.dumps(v)

    def lines(node: Any, indent: int) -> Iterator[str]:
        pad = "  " * indent
        for k, v in node.items():
            if isinstance(v, dict) and v:
                yield f"{pad}{k}:"
                yield from lines(v, indent + 1)
            elif isinstance(v, list):
                yield f"{pad}{k}: [{', '.join(scalar(x) if not isinstance(x, (dict, list)) else json.dumps(x) for x in v)}]"
            else:
                yield f"{pad}{k}: {scalar(v) if not isinstance(v, dict) else '{}'}"

    return ("\n".join(lines(doc, 0)) + "\n").encode()


NET = b"import torch\n\ndef build():\n    return torch.nn.Linear(8, 4)\n"


def _plan(name: str, body: bytes, code: int, *says: str) -> Case:
    return Case(
        f"config/{name}", ("plan", "--config", f"{{d}}/{CONFIG}"), {CONFIG: body, "net.py": NET}, code, says
    )


def _key(name: str, path: str, value: Any, *says: str, code: int = USAGE) -> Case:
    return _plan(name, _yaml(_with(path, value)), code, CONFIG, *(says or (path,)))


INF, NAN = "!raw:.inf", "!raw:.nan"

CONFIG_VALUES: list[tuple[str, str, Any, tuple[str, ...]]] = [
    # name, dotted key, value, words of the message (default: the key)
    ("opset-float", "export.opsets", [17.0], ("export.opsets.0", "integer")),
    ("opset-string-number", "export.opsets", ["17"], ()),
    ("opset-too-low", "export.opsets", [3], ()),
    ("opset-negative", "export.opsets", [-17], ()),
    ("opset-huge", "export.opsets", [2**40], ("export.opsets.0", "out of range")),
    ("opset-inf", "export.opsets", [INF], ("export.opsets.0", "finite")),
    ("opset-nan", "export.opsets", [NAN], ("export.opsets.0", "finite")),
    ("opset-bool", "export.opsets", [True], ()),
    ("opset-null", "export.opsets", [None], ()),
    ("opsets-scalar", "export.opsets", 17, ()),
    ("opsets-empty", "export.opsets", [], ()),
    ("opsets-object", "export.opsets", {"a": 1}, ()),
    ("exporter-unknown", "export.exporters", ["onnxscript"], ("export.exporters.0", "dynamo")),
    ("exporter-number", "export.exporters", [1], ()),
    ("export-timeout-1e999", "export.timeout_s", "!raw:1e999", ("export.timeout_s", "finite")),
    ("export-timeout-inf", "export.timeout_s", INF, ("export.timeout_s", "finite")),
    ("export-timeout-nan", "export.timeout_s", NAN, ("export.timeout_s", "finite")),
    ("export-timeout-zero", "export.timeout_s", 0, ()),
    ("export-timeout-negative", "export.timeout_s", -5, ()),
    ("export-timeout-1e300", "export.timeout_s", 1e300, ("export.timeout_s", "week")),
    ("export-timeout-string", "export.timeout_s", "fast", ()),
    ("export-unknown-key", "export.opset", [17], ("export.opset", "opsets")),
    ("verify-timeout-1e999", "verify.timeout_s", "!raw:1e999", ("verify.timeout_s", "finite")),
    ("verify-timeout-huge-int", "verify.timeout_s", 10**30, ("verify.timeout_s", "out of range")),
    ("verify-timeout-week-plus", "verify.timeout_s", 10**6, ("verify.timeout_s", "week")),
    ("verify-timeout-null", "verify.timeout_s", None, ()),
    ("atol-inf", "verify.tolerance.atol", INF, ("verify.tolerance.atol", "finite")),
    ("atol-nan", "verify.tolerance.atol", NAN, ("verify.tolerance.atol", "finite")),
    ("atol-negative", "verify.tolerance.atol", -1e-4, ()),
    ("atol-null", "verify.tolerance.atol", None, ()),
    ("atol-string", "verify.tolerance.atol", "small", ()),
    ("atol-1e999", "verify.tolerance.atol", "!raw:1e999", ("verify.tolerance.atol", "finite")),
    ("rtol-minus-inf", "verify.tolerance.rtol", "!raw:-.inf", ("verify.tolerance.rtol", "finite")),
    ("rtol-negative", "verify.tolerance.rtol", -0.5, ()),
    ("per-output-atol-inf", "verify.tolerance.outputs", {"logits": {"atol": INF}}, ("logits", "finite")),
    ("per-output-unknown", "verify.tolerance.outputs", {"logitz": {"atol": 1}}, ("logitz", "logits")),
    ("per-output-atol-negative", "verify.tolerance.outputs", {"logits": {"atol": -1}}, ("logits",)),
    ("batch-float", "verify.batch_sizes", [1.0], ("verify.batch_sizes.0", "integer")),
    ("batch-zero", "verify.batch_sizes", [0], ()),
    ("batch-negative", "verify.batch_sizes", [-8], ()),
    ("batch-inf", "verify.batch_sizes", [INF], ("verify.batch_sizes.0", "finite")),
    ("batch-huge", "verify.batch_sizes", [2**33], ("verify.batch_sizes.0", "out of range")),
    ("batch-string", "verify.batch_sizes", ["8"], ()),
    ("batch-scalar", "verify.batch_sizes", 8, ()),
    ("seed-float", "verify.seed", 1.5, ("verify.seed", "integer")),
    ("seed-huge", "verify.seed", 2**64, ("verify.seed", "out of range")),
    ("seed-string", "verify.seed", "zero", ()),
    ("random-inputs-zero", "verify.random_inputs", 0, ()),
    ("random-inputs-float", "verify.random_inputs", 4.0, ("verify.random_inputs", "integer")),
    ("random-inputs-huge", "verify.random_inputs", 10**12, ("verify.random_inputs", "out of range")),
    ("latency-runs-zero", "verify.latency_runs", 0, ()),
    ("latency-runs-float", "verify.latency_runs", 2.5, ()),
    ("top-k-zero", "verify.decision.top_k", 0, ()),
    ("top-k-float", "verify.decision.top_k", 1.0, ("verify.decision.top_k", "integer")),
    ("decision-unknown-output", "verify.decision.output", "probs", ("probs", "logits")),
    ("decision-output-number", "verify.decision.output", 3, ()),
    ("strict-fallback-string", "verify.strict_fallback", "yes please", ()),
    ("verify-unknown-key", "verify.tolerances", {}, ("verify.tolerances", "tolerance")),
    ("budget-over-one", "budgets.cpu_fallback.max_time_share", 1.5, ()),
    ("budget-nan", "budgets.cpu_fallback.max_time_share", NAN, ("max_time_share", "finite")),
    ("budget-negative", "budgets.cpu_fallback.max_time_share", -0.1, ()),
    ("runtime-bad-spec", "targets.runtimes", ["one.twenty"], ("targets.runtimes.0", "runtime spec")),
    ("runtime-number", "targets.runtimes", [1.2], ()),
    ("runtime-nightly-no-index", "targets.runtimes", ["nightly"], ("targets.runtimes", "nightly_index")),
    ("runtimes-empty", "targets.runtimes", [], ()),
    ("provider-unknown", "targets.providers", ["tpu"], ("targets.providers.0",)),
    ("provider-typo", "targets.providers", ["cpuu"], ("targets.providers.0", "cpu")),
    ("exclude-not-object", "targets.exclude", ["1.20.1"], ("targets.exclude.0",)),
    ("exclude-unknown-key", "targets.exclude", [{"runtim": "1.20.1"}], ("targets.exclude.0",)),
    ("include-nested", "targets.include", [{"runtime": {"a": 1}}], ("targets.include.0",)),
    ("targets-unknown-key", "targets.runtime", ["1.20.1"], ("targets.runtime", "runtimes")),
    ("version-two", "version", 2, ("version",)),
    ("version-string", "version", "1", ("version",)),
    ("version-missing", "version", _DELETE, ("version",)),
    ("model-missing", "model", _DELETE, ("model",)),
    ("model-both-factory-and-onnx", "model.onnx", "model.onnx", ("model", "either")),
    ("model-factory-number", "model.factory", 7, ("model.factory",)),
    ("model-unknown-key", "model.factories", "x", ("model.factories", "factory")),
    ("input-shape-float", "model.inputs", {"x": {"shape": ["batch", 8.0]}}, ("model.inputs.x.shape.1",)),
    ("input-shape-huge", "model.inputs", {"x": {"shape": ["batch", 2**40]}}, ("out of range",)),
    ("input-shape-inf", "model.inputs", {"x": {"shape": ["batch", INF]}}, ("finite",)),
    ("input-shape-nested", "model.inputs", {"x": {"shape": [["batch"], 8]}}, ("model.inputs.x.shape.0",)),
    ("input-dtype-unknown", "model.inputs", {"x": {"shape": [8], "dtype": "float33"}}, ("dtype",)),
    (
        "input-int-no-range",
        "model.inputs",
        {"x": {"shape": [8], "dtype": "int64"}},
        ("model.inputs.x", "range"),
    ),
    (
        "input-range-inf",
        "model.inputs",
        {"x": {"shape": [8], "dtype": "int64", "range": [0, INF]}},
        ("finite",),
    ),
    (
        "input-range-inverted",
        "model.inputs",
        {"x": {"shape": [8], "dtype": "int64", "range": [100, 0]}},
        ("model.inputs.x.range", "[100, 0]", "empty"),
    ),
    (
        "input-range-empty",
        "model.inputs",
        {"x": {"shape": [8], "dtype": "int64", "range": [5, 5]}},
        ("model.inputs.x.range", "empty"),
    ),
    (
        "input-range-no-integer",
        "model.inputs",
        {"x": {"shape": [8], "dtype": "int32", "range": [0.2, 0.7]}},
        ("model.inputs.x.range", "no integer"),
    ),
    (
        "input-float-range-inverted",
        "model.inputs",
        {"x": {"shape": [8], "range": [1.0, -1.0]}},
        ("model.inputs.x.range", "empty"),
    ),
    ("input-not-object", "model.inputs", {"x": [8]}, ("model.inputs.x",)),
    ("inputs-list", "model.inputs", [{"x": 1}], ("model.inputs",)),
    ("outputs-empty-name", "model.outputs", [""], ("logits",)),
    ("outputs-number", "model.outputs", [1], ("model.outputs.0",)),
    ("dynamic-axes-unknown", "model.dynamic_axes", {"y": {"0": "batch"}}, ("model.dynamic_axes.y",)),
    (
        "dynamic-axes-out-of-range",
        "model.dynamic_axes",
        {"x": {"5": "batch"}},
        ("model.dynamic_axes.x", "rank"),
    ),
    ("dim-sizes-zero", "model.dim_sizes", {"seq": 0}, ("model.dim_sizes.seq",)),
    ("dim-sizes-float", "model.dim_sizes", {"seq": 4.0}, ("model.dim_sizes.seq", "integer")),
    (
        "preprocessing-mean-nan",
        "model.preprocessing",
        {"mean": [NAN]},
        ("model.preprocessing.mean.0", "finite"),
    ),
    ("preprocessing-std-string", "model.preprocessing", {"std": ["x"]}, ("model.preprocessing.std.0",)),
    ("unknown-top-level", "budget", {}, ("budget", "budgets")),
]

ALIAS_BOMB = b'version: 1\na: &a ["x","x","x","x","x","x","x","x","x"]\n' + b"".join(
    f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n".encode() for p, c in zip("abcdefgh", "bcdefghi", strict=True)
)

CONFIG_TEXTS: list[tuple[str, bytes, int, tuple[str, ...]]] = [
    # name, file bytes, exit code, words
    ("non-utf8-latin1", _yaml(BASE).replace(b"logits", b"logits\xe9"), USAGE, ("UTF-8",)),
    ("non-utf8-ff", b"\xff\xfe" + _yaml(BASE), USAGE, ("UTF-8",)),
    ("non-utf8-in-comment", _yaml(BASE) + b"# caf\xe9\n", USAGE, (":", "UTF-8")),
    ("utf16", _yaml(BASE).decode().encode("utf-16"), USAGE, ("UTF-8",)),
    ("control-bel", _yaml(BASE).replace(b"version: 1", b"version: 1\x07"), USAGE, ("not valid YAML",)),
    ("control-nul", _yaml(BASE).replace(b"dynamo", b"dyn\x00amo"), USAGE, ("not valid YAML",)),
    ("control-escape", _yaml(BASE).replace(b"logits", b"log\x1b[31mits"), USAGE, ("not valid YAML",)),
    ("control-backspace-key", b"vers\x08ion: 1\n", USAGE, ("not valid YAML",)),
    ("complex-key-seq", b"version: 1\n? [a, b]\n: 1\n", USAGE, ("key must be a plain name",)),
    ("complex-key-map", b"version: 1\n? {a: 1}\n: 1\n", USAGE, ("key must be a plain name",)),
    (
        "complex-key-nested",
        _yaml(BASE).replace(b"  outputs:", b"  ? [1, 2]\n  : 3\n  outputs:"),
        USAGE,
        ("model",),
    ),
    ("null-key", b"version: 1\n~: 1\n", USAGE, ("key must be a plain name",)),
    ("alias-bomb", ALIAS_BOMB, USAGE, ("values", "aliases")),
    ("deep-nesting", b"version: 1\nx: " + b"[" * 200 + b"]" * 200 + b"\n", USAGE, ("deeper",)),
    ("deep-flow-nesting-10k", b"x: " + b"[" * 10_000 + b"]" * 10_000 + b"\n", USAGE, (CONFIG,)),
    ("too-large", b"# " + b"x" * (2 << 20) + b"\n", USAGE, ("larger than",)),
    ("empty", b"", USAGE, ("empty",)),
    ("only-comments", b"# nothing\n", USAGE, ("empty",)),
    ("a-list", b"- 1\n- 2\n", USAGE, (CONFIG,)),
    ("a-scalar", b"hello\n", USAGE, (CONFIG,)),
    ("tabs", b"version: 1\nmodel:\n\tfactory: x\n", USAGE, ("not valid YAML",)),
    ("duplicate-key", _yaml(BASE) + b"version: 1\n", USAGE, ("not valid YAML",)),
    ("unclosed-flow", b"version: 1\nexport: {opsets: [17\n", USAGE, ("not valid YAML",)),
    ("bad-anchor", b"version: 1\nmodel: *nothing\n", USAGE, ("not valid YAML",)),
    ("python-tag", b"version: !!python/object:os.system 1\n", USAGE, (CONFIG,)),
    ("binary-tag", b"version: !!binary aGVsbG8=\n", USAGE, (CONFIG,)),
    ("timestamp-version", _yaml(BASE).replace(b"version: 1", b"version: 2001-12-14"), USAGE, ("version",)),
    ("multi-document", _yaml(BASE) + b"---\n" + _yaml(BASE), USAGE, ("not valid YAML",)),
    ("random-bytes", bytes(range(256)) * 4, USAGE, (CONFIG,)),
]


def config_cases() -> list[Case]:
    cases = [_key(name, path, value, *says) for name, path, value, says in CONFIG_VALUES]
    cases += [_plan(name, body, code, *says) for name, body, code, says in CONFIG_TEXTS]
    cases.append(_plan("good-base", _yaml(BASE), PASS, "ort1.20.1-cpu-op17-dynamo"))
    cases.append(_plan("good-with-bom", b"\xef\xbb\xbf" + _yaml(BASE), PASS, "ort1.20.1-cpu-op17-dynamo"))
    cases.append(
        Case(
            "config/no-such-file",
            ("plan", "--config", "{d}/missing.yml"),
            {},
            USAGE,
            ("missing.yml", "no such"),
        )
    )
    cases.append(Case("config/a-directory", ("plan", "--config", "{d}/dir"), {"dir/x": b""}, USAGE, ("dir",)))
    return cases


def cli_cases() -> list[Case]:
    files = {CONFIG: _yaml(BASE), "net.py": NET}
    plan = ("plan", "--config", f"{{d}}/{CONFIG}")
    return [
        Case("cli/plan-out-proc", (*plan, "--out", "/proc/x"), files, USAGE, ("--out", "/proc/x")),
        Case("cli/plan-out-proc-nested", (*plan, "--out", "/proc/x/y/plan.json"), files, USAGE, ("--out",)),
        Case("cli/plan-out-a-directory", (*plan, "--out", "{d}"), files, USAGE, ("--out",)),
        Case(
            "cli/plan-out-under-a-file",
            (*plan, "--out", f"{{d}}/{CONFIG}/plan.json"),
            files,
            USAGE,
            ("--out",),
        ),
        Case("cli/plan-only-nothing", (*plan, "--only", "nothing-*"), files, USAGE, ("nothing-*",)),
        Case(
            "cli/verify-bad-target-id",
            ("verify", "--bundle", "{d}", "--target", "op17"),
            files,
            USAGE,
            ("op17",),
        ),
        Case(
            "cli/verify-target-float-opset",
            ("verify", "--bundle", "{d}", "--target", "ort1.20.1-cpu-op17.0-dynamo"),
            files,
            USAGE,
            ("op17.0",),
        ),
        Case(
            "cli/verify-no-bundle",
            ("verify", "--bundle", "{d}/none", "--target", "ort1.20.1-cpu-op17-dynamo"),
            files,
            USAGE,
            ("none", "export"),
        ),
        *(
            Case(
                f"cli/verify-timeout-{name}",
                ("verify", "--bundle", "{d}", "--target", "ort1.20.1-cpu-op17-dynamo", "--timeout", value),
                files,
                USAGE,
                ("--timeout",),
            )
            for name, value in (
                ("inf", "inf"),
                ("nan", "nan"),
                ("1e999", "1e999"),
                ("zero", "0"),
                ("huge", "1e300"),
            )
        ),
        Case(
            "cli/run-jobs-zero",
            ("run", "--config", f"{{d}}/{CONFIG}", "--jobs", "0"),
            files,
            USAGE,
            ("--jobs",),
        ),
        Case(
            "cli/run-jobs-huge",
            ("run", "--config", f"{{d}}/{CONFIG}", "--jobs", "99999"),
            files,
            USAGE,
            ("--jobs",),
        ),
        Case(
            "cli/verify-no-python",
            ("verify", "--bundle", "{d}", "--target", "ort1.20.1-cpu-op17-dynamo", "--python", "{d}/py"),
            files,
            USAGE,
            ("--python",),
        ),
    ]


# --- report ------------------------------------------------------------------------------------------

REPORT = ("report", "--results", "{d}/results", "--out", "{d}/out", "--no-publish")
WITH_PLAN = (*REPORT, "--plan", "{d}/plan.json")

Mutation = Callable[[dict[str, Any]], Any]


def _set(key: str, value: Any) -> Mutation:
    def edit(r: dict[str, Any]) -> Any:
        r[key] = value
        return r

    return edit


def _drop(key: str) -> Mutation:
    def edit(r: dict[str, Any]) -> Any:
        del r[key]
        return r

    return edit


RESULT_EDITS: list[tuple[str, Mutation | bytes, tuple[str, ...]]] = [
    # name, an edit of the first result's JSON (or the bytes to write instead), words
    ("truncated", b'{"schema_version": 1, "target": {"runtime": "1.20.1", "prov', ("truncated",)),
    ("empty-file", b"", ("not valid JSON",)),
    ("binary", bytes(range(256)), ("not valid JSON",)),
    ("non-utf8", b'{"schema_version": 1, "status": "passed\xff"}', ("not valid JSON",)),
    (
        "git-lfs-pointer",
        b"version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 12\n",
        ("not valid JSON",),
    ),
    ("deep-nesting", b"[" * 100_000 + b"]" * 100_000, ("nested",)),
    ("deep-object", b'{"a":' * 100_000 + b"1" + b"}" * 100_000, ("nested",)),
    ("schema-99", _set("schema_version", 99), ("schema_version 99", "upgrade")),
    ("schema-0", _set("schema_version", 0), ("schema_version 0",)),
    ("schema-string", _set("schema_version", "1"), ("schema_version",)),
    ("schema-float", _set("schema_version", 1.0), ("schema_version",)),
    ("schema-missing", _drop("schema_version"), ("schema_version",)),
    ("status-unknown", _set("status", "green"), ("green",)),
    ("status-missing", _drop("status"), ("status",)),
    ("target-missing", _drop("target"), ("target",)),
    ("target-not-object", _set("target", "ort1.20.1-cpu-op17-dynamo"), ("target",)),
    ("summary-number", _set("summary", 3), ("summary",)),
    ("unknown-key", _set("verdict", "pass"), ("verdict",)),
    ("checks-not-list", _set("checks", {"a": 1}), ("checks",)),
    ("duration-string", _set("duration_s", "fast"), ("duration_s",)),
    ("a-list", lambda r: [r], ()),
    ("empty-object", b"{}", ("empty JSON object",)),
    ("empty-object-spaced", b" {\n}\n", ("empty JSON object",)),
]


def report_cases() -> list[Case]:
    cases = []
    for name, _edit, says in RESULT_EDITS:
        for planned in (False, True):
            for how in ("beside", "instead"):
                # beside: an extra broken copy; instead: the target's only result is broken (it vanished)
                code, words = FAIL, ("broken.json", *says)  # unreadable blocks, with or without a plan
                if name == "a-list":  # JSON that is no result at all is not one; the plan finds the gap
                    code, words = (FAIL, ("missing",)) if planned and how == "instead" else (PASS, ())
                cases.append(
                    Case(
                        f"report/result-{name}-{how}-{'with-plan' if planned else 'no-plan'}",
                        WITH_PLAN if planned else REPORT,
                        {},
                        code,
                        words,
                        setup=f"results-{how}:{name}",
                    )
                )
    cases += [
        Case("report/all-passing", WITH_PLAN, {}, PASS, ("passed",), setup="results:"),
        Case("report/result-symlink-outside", REPORT, {}, FAIL, ("leads outside",), setup="symlink:result"),
        Case(
            "report/junit-symlink-outside",
            (*REPORT, "--junit", "{d}/junit"),
            {},
            FAIL,
            ("leads outside",),
            setup="symlink:junit",
        ),
        Case(
            "report/duplicates-disagree",
            REPORT,
            {},
            FAIL,
            ("disagree", "failed", "passed"),
            setup="duplicates:disagree",
        ),
        Case("report/duplicates-agree", REPORT, {}, PASS, ("passed",), setup="duplicates:agree"),
        Case("report/older-failing-newer-passing", REPORT, {}, FAIL, ("disagree",), setup="duplicates:rerun"),
        Case("report/no-results-dir", REPORT, {}, USAGE, ("--results", "no such"), setup="nothing"),
        Case("report/no-results-dir-with-plan", WITH_PLAN, {}, FAIL, ("missing",), setup="plan-only"),
        Case(
            "report/plan-schema-99", WITH_PLAN, {}, USAGE, ("plan.json", "schema_version 99"), setup="plan:99"
        ),
        Case("report/plan-truncated", WITH_PLAN, {}, USAGE, ("plan.json",), setup="plan:truncated"),
        Case("report/plan-binary", WITH_PLAN, {}, USAGE, ("plan.json",), setup="plan:binary"),
        Case("report/plan-deep", WITH_PLAN, {}, USAGE, ("plan.json",), setup="plan:deep"),
        Case("report/plan-targets-not-list", WITH_PLAN, {}, USAGE, ("plan.json",), setup="plan:targets"),
    ]
    junit = (*REPORT, "--junit", "{d}/junit")
    for name, body, code, says in JUNIT_FILES:
        cases.append(
            Case(f"report/junit-{name}", junit, {"junit/other.xml": body}, code, says, setup="results:")
        )
    for name, event, says in EVENTS:
        cases.append(
            Case(
                f"report/event-{name}",
                REPORT,
                {"event.json": event},
                PASS,
                says,
                env={
                    "GITHUB_EVENT_PATH": "{d}/event.json",
                    "GITHUB_REPOSITORY": "acme/digits",
                    "GITHUB_SHA": "a" * 40,
                },
                setup="results:",
            )
        )
    return cases


def _nested_suites(n: int) -> bytes:
    return (
        b"<testsuites>"
        + b"<testsuite name='s'>" * n
        + b"<testcase name='t'><failure message='boom'/></testcase>"
        + b"</testsuite>" * n
        + b"</testsuites>"
    )


def _many_failures(n: int) -> bytes:
    cases = b"".join(b"<testcase name='t%d'><failure message='m'/></testcase>" % i for i in range(n))
    return b"<testsuite name='s'>" + cases + b"</testsuite>"


JUNIT_FILES: list[tuple[str, bytes, int, tuple[str, ...]]] = [
    ("unknown-encoding", b"<?xml version='1.0' encoding='klingon'?><testsuite/>", FAIL, ("other.xml", "XML")),
    ("encoding-utf7", b"<?xml version='1.0' encoding='utf-7'?><testsuite/>", FAIL, ("other.xml",)),
    ("nested-5000", _nested_suites(5000), FAIL, ("1 other test(s) failed",)),
    ("nested-50000", _nested_suites(50_000), FAIL, ("other.xml",)),
    ("failures-12000", _many_failures(12_000), FAIL, ("12000 other test(s) failed",)),
    ("not-xml", b"this is not xml", FAIL, ("other.xml", "XML")),
    ("empty", b"", FAIL, ("other.xml",)),
    ("html-root", b"<html><body>hi</body></html>", FAIL, ("other.xml", "<html>")),
    (
        "billion-laughs",
        b'<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;"><!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;"><!ENTITY e "&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;"><!ENTITY f "&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;"><!ENTITY g "&f;&f;&f;&f;&f;&f;&f;&f;&f;&f;"><!ENTITY h "&g;&g;&g;&g;&g;&g;&g;&g;&g;&g;">]><testsuite name="&h;"/>',
        FAIL,
        ("other.xml",),
    ),
    (
        "external-entity",
        b'<?xml version="1.0"?><!DOCTYPE t [<!ENTITY x SYSTEM "file:///etc/passwd">]><testsuite name="&x;"><testcase name="t"/></testsuite>',
        FAIL,
        ("other.xml",),
    ),
    ("binary", bytes(range(256)), FAIL, ("other.xml",)),
    ("non-utf8-declared-utf8", b"<testsuite name='caf\xe9'/>", FAIL, ("other.xml",)),
    ("time-not-number", b"<testsuite><testcase name='t' time='soon'/></testsuite>", PASS, ("1 passed",)),
    ("time-nan", b"<testsuite><testcase name='t' time='nan'/></testsuite>", PASS, ("1 passed",)),
    ("passing", b"<testsuite><testcase name='t'/></testsuite>", PASS, ("1 passed",)),
]

EVENTS: list[tuple[str, bytes, tuple[str, ...]]] = [
    ("head-null", b'{"pull_request": {"number": 7, "head": null}}', ("passed",)),
    ("head-repo-null", b'{"pull_request": {"number": 7, "head": {"sha": "b", "repo": null}}}', ("passed",)),
    ("head-sha-number", b'{"pull_request": {"number": 7, "head": {"sha": 5}}}', ("passed",)),
    ("pull-request-null", b'{"pull_request": null}', ("passed",)),
    ("number-string", b'{"pull_request": {"number": "7"}}', ("passed",)),
    ("number-bool", b'{"pull_request": {"number": true}}', ("passed",)),
    (
        "workflow-run-prs-null",
        b'{"workflow_run": {"pull_requests": null, "head_repository": null}}',
        ("passed",),
    ),
    ("workflow-run-prs-strings", b'{"workflow_run": {"pull_requests": ["x"]}}', ("passed",)),
    ("truncated", b'{"pull_request": {"numb', ("passed",)),
    ("a-list", b"[1, 2]", ("passed",)),
    ("non-utf8", b'{"pull_request": "\xff"}', ("passed",)),
    ("deep", b"[" * 100_000 + b"]" * 100_000, ("passed",)),
]


def all_cases() -> list[Case]:
    return [*config_cases(), *cli_cases(), *report_cases(), *bundle_cases()]


# --- bundles refused before the runtime starts -------------------------------------------------------

BUNDLE_EDITS: list[tuple[str, str, tuple[str, ...]]] = [
    # name, the edit test_corpus.SETUPS applies to a real bundle, words
    ("manifest-missing", "rm:manifest.json", ("manifest.json",)),
    ("manifest-truncated", "truncate:manifest.json", ("manifest.json", "not a valid manifest")),
    ("manifest-binary", "binary:manifest.json", ("manifest.json",)),
    ("manifest-schema-99", "manifest:schema_version=99", ("schema_version 99",)),
    ("manifest-schema-0", "manifest:schema_version=0", ("schema_version 0",)),
    ("files-dotdot", "manifest:files+../outside.txt", ("../outside.txt",)),
    ("files-absolute", "manifest:files+/etc/passwd", ("/etc/passwd",)),
    ("files-symlink-out", "symlink:escape.pb", ("escape.pb", "outside")),
    ("test-data-absolute", "manifest:dataset=/tmp", ("/tmp",)),
    ("test-data-dotdot", "manifest:dataset=../", ("'../'",)),
    ("test-data-symlink-out", "symlink-dataset", ("test_data_set_0",)),
    ("model-symlink-out", "symlink-model", ("model.onnx",)),
    ("unlisted-input-symlink-out", "symlink-unlisted:test_data_set_0/input_0.pb", ("input_0.pb", "outside")),
    ("unlisted-file-symlink-out", "symlink-unlisted:model.onnx.data", ("model.onnx.data", "outside")),
    ("unlisted-dir-symlink-out", "symlink-unlisted-dir:test_data_set_1", ("test_data_set_1", "outside")),
    ("tolerance-null", "manifest:atol=null", ("atol", "finite")),
    ("tolerance-negative", "manifest:atol=-1", ("atol", "finite")),
    ("tolerance-rtol-null", "manifest:rtol=null", ("rtol", "finite")),
    ("tolerance-per-output-null", "manifest:per-output-null", ("tolerance_per_output.logits",)),
    ("tolerance-string", "manifest:atol='x'", ("not a valid manifest",)),
    ("top-k-zero", "manifest:top_k=0", ("top_k",)),
    ("batch-zero", "manifest:batch=0", ("batch_sizes",)),
    ("hash-mismatch", "corrupt:model.onnx", ("model.onnx", "sha256")),
    ("listed-file-missing", "rm:test_data_set_0/output_0.pb", ("output_0.pb", "missing")),
    ("unknown-key", "manifest:extra=1", ("not a valid manifest",)),
    ("wrong-bundle-for-target", "target:ort1.32.0-cpu-op18-onnx", ("op18",)),
    ("unknown-provider", "target:ort1.32.0-tpu-op17-onnx", ("tpu",)),
]

TARGET = "ort1.32.0-cpu-op17-onnx"


def bundle_cases() -> list[Case]:
    return [
        Case(
            f"bundle/{name}",
            ("verify", "--bundle", "{d}/bundle", "--target", TARGET, "--out", "{d}/out"),
            {},
            USAGE,
            says,
            setup=f"bundle:{edit}",
        )
        for name, edit, says in BUNDLE_EDITS
    ]
