"""The wheel, built from the committed tree, ships every declared data file and an install of it in
a fresh virtual environment loads them, away from any checkout."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = {"matrix": "ci_onnx/_data/matrix", "templates": "ci_onnx/_data/templates"}

pytestmark = pytest.mark.e2e


def _run(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False, **kwargs)  # type: ignore[call-overload]
    assert done.returncode == 0, f"{argv}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built from a copy of what git would commit, so nothing ignored or stray in the checkout helps."""
    src = tmp_path_factory.mktemp("src")
    listed = _run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT
    ).stdout.split("\0")
    for name in filter(None, listed):
        if (ROOT / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            (src / name).write_bytes((ROOT / name).read_bytes())
    out = tmp_path_factory.mktemp("wheel")
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(src),
        ]
    )
    (built,) = out.glob("onnx_gate-*.whl")
    return built


def test_the_wheel_holds_every_declared_data_file_byte_for_byte(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as whl:
        names = set(whl.namelist())
        expected = {
            f"{DATA[folder]}/{p.relative_to(ROOT / folder).as_posix()}": p
            for folder in DATA
            for p in (ROOT / folder).rglob("*")
            if p.is_file()
        }
        expected |= {
            p.relative_to(ROOT).as_posix(): p
            for pattern in ("ci_onnx/schemas/*.json", "ci_onnx/runners/node/*.mjs")
            for p in ROOT.glob(pattern)
        }
        assert any(n.endswith(".toml") for n in expected) and any(n.endswith(".j2") for n in expected)
        assert sorted(set(expected) - names) == []
        for name, source in expected.items():
            assert whl.read(name) == source.read_bytes(), name
    # nothing of the data is shipped twice (at its old place inside the package, too)
    assert not [
        n for n in names if n.startswith(("ci_onnx/matrix/", "ci_onnx/templates/")) and not n.endswith(".py")
    ]


def test_an_install_in_a_fresh_venv_loads_the_data_from_the_package(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q", str(wheel)])
    # onnx-gate's dependencies from the dev environment, without its (editable) onnx-gate: a path in a
    # .pth file is added as it is, and the .pth files inside it are not processed
    site = Path(
        _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    )
    (site / "zz-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    probe = textwrap.dedent(
        """
        import json, sys
        import ci_onnx
        from ci_onnx import _data, matrix, scaffold
        from ci_onnx.report import render
        templates = sorted(
            p.relative_to(_data.templates_dir()).as_posix()
            for p in _data.templates_dir().rglob("*.j2")
        )
        for name in templates:
            # the reports use jinja's delimiters, onnx-gate.yml and the workflows [[ ]] and [% %]
            env = render.environment() if name.endswith(".md.j2") else scaffold._environment()
            env.get_template(name)
        workflow = scaffold.workflow("pr-gate.yml.j2", scaffold.Settings())
        print(json.dumps({
            "package": ci_onnx.__file__,
            "matrix": str(_data.matrix_dir()),
            "templates": str(_data.templates_dir()),
            "tables": [len(matrix.runtimes()), len(matrix.providers()), len(matrix.runners()), len(matrix.presets())],
            "template_names": templates,
            "workflow_has_jobs": "jobs:" in workflow,
        }))
        """
    )
    clean = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PYTHONHOME"}}
    done = _run([str(python), "-c", probe], cwd=tmp_path, env=clean)
    import json

    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert Path(seen["package"]).is_relative_to(venv)
    assert Path(seen["matrix"]) == Path(seen["package"]).parent / "_data" / "matrix"
    assert Path(seen["templates"]).is_relative_to(venv)
    assert all(n > 0 for n in seen["tables"]), seen["tables"]
    assert seen["template_names"] == sorted(
        p.relative_to(ROOT / "templates").as_posix() for p in (ROOT / "templates").rglob("*.j2")
    )
    assert seen["workflow_has_jobs"]
