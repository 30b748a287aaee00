"""Every fact about a provider lives in matrix/providers.toml: the host hands each observer the names it
needs at launch, so a provider row added there (or a name changed there) needs no observer edit."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from ci_onnx import matrix
from ci_onnx.contracts.target import Target
from ci_onnx.contracts.verify_options import VerifyOptions
from ci_onnx.runners import base, native, node, python, web
from ci_onnx.verify import stage

RUNNERS = Path(native.__file__).parent
OBSERVERS = [
    RUNNERS / "native" / "observe.c",
    RUNNERS / "node" / "observe.mjs",
    RUNNERS / "web" / "drive.mjs",
    RUNNERS / "web" / "page.mjs",
]
NEW = matrix.ProviderInfo(
    "warpdrive",
    "WarpDriveExecutionProvider",
    "onnxruntime",
    ("ubuntu-latest",),
    False,
    True,
    c_api="WarpDrive",
)


@pytest.fixture
def table(monkeypatch: pytest.MonkeyPatch) -> dict[str, matrix.ProviderInfo]:
    """providers.toml with a new row, and every existing row's names changed."""
    rows = {
        key: dataclasses.replace(p, ep=f"Renamed{p.ep}", c_api=p.c_api and f"Renamed{p.c_api}")
        for key, p in matrix.providers().items()
    }
    rows["warpdrive"] = NEW
    monkeypatch.setattr(matrix, "providers", lambda: rows)
    for sizes in ("ci_onnx.observer.feeds.served_sizes", "ci_onnx.runners.web.served_sizes"):
        monkeypatch.setattr(sizes, lambda bundle: [1, 8])  # read from the bundle otherwise
    return rows


def _launch(tmp_path: Path, target: Target) -> base.Launch:
    """A launch as verify makes it: its EP name is providers.toml's (verify.stage)."""
    return base.Launch(tmp_path, target, tmp_path / "o", VerifyOptions(), stage.provider_of(target).ep)


def _flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1] if name in argv else ""


def _argv(kind: str, provider: str, tmp_path: Path) -> list[str]:
    """The observer's command line for one target of ``kind`` on ``provider``, as the host makes it."""
    t = Target("1.29.0", provider, 17, "dynamo", runner=kind)
    x = _launch(tmp_path, t)
    env = base.RunnerEnv(kind, t.runtime, tmp_path, "program", "package")
    if kind == "native":  # the android kind runs the same command line
        return native.observer_argv(
            "o", lib="l", bundle="b", out="o", target=t, options=x.options, batch_sizes=[1]
        )
    if kind == "node":
        return node.observer_argv(env, x)
    if kind == "web":
        return web.argv(env, "chromium", tmp_path / "p", x)
    return python.observer_args(x, tmp_path)


def _told(kind: str, provider: str, argv: list[str]) -> tuple[str, str]:
    """What the observer learns of the provider from ``argv``: its EP name, and its C API name."""
    if kind == "python":
        return _flag(argv, "--ep"), ""
    if kind == "node":
        names = dict(kv.split("=") for kv in _flag(argv, "--ep-names").split(","))
        assert names == {key: p.ep for key, p in matrix.providers().items()}  # to name what it lists
        return names[_flag(argv, "--ep")], ""
    return _flag(argv, "--ep-name"), _flag(argv, "--ep-append")


@pytest.mark.parametrize(
    ("kind", "provider"),
    [
        *[("python", p) for p in ("cpu", "openvino", "warpdrive")],
        *[("native", p) for p in ("cpu", "xnnpack", "nnapi", "warpdrive")],
        *[("node", p) for p in ("cpu", "webgpu", "warpdrive")],
        *[("web", p) for p in ("wasm", "wasmmt", "webgpu")],  # its host side holds the threads of each
    ],
)
def test_each_observer_gets_the_providers_names_from_providers_toml(
    table: dict[str, matrix.ProviderInfo], kind: str, provider: str, tmp_path: Path
) -> None:
    ep, c_api = _told(kind, provider, _argv(kind, provider, tmp_path))
    assert ep == table[provider].ep
    assert c_api == (table[provider].c_api if kind == "native" else "")


def test_no_observer_keeps_a_table_of_provider_names() -> None:
    """The observers name no execution provider but the CPU's (what every session falls back to)."""
    for source in OBSERVERS:
        found = re.findall(r"\b[A-Za-z]+ExecutionProvider\b", source.read_text())
        named = {n for n in found if "Append" not in n}  # the C API's functions that append one
        assert named <= {"CPUExecutionProvider"}, source.name
