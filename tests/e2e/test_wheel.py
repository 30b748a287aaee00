"""The README's install path, run as written: its commands build the wheel from the committed tree
and install it, with its dependencies, in a fresh virtual environment; the wheel ships every declared
data file and the install loads them, away from any checkout."""

from __future__ import annotations

import os
import subprocess
import sys
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


INSTALL_BEGIN, INSTALL_END = "<!-- install:begin", "<!-- install:end -->"


def readme_install_commands() -> list[str]:
    """The commands of README's install block, as a user copies them."""
    text = (ROOT / "README.md").read_text()
    block = text.split(INSTALL_BEGIN, 1)[1].split(INSTALL_END, 1)[0]
    code = block.split("```sh", 1)[1].split("```", 1)[0]
    return [line.split("  #")[0].strip() for line in code.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the wheel, the fresh venv's python) after README's commands ran in a copy of what git would
    commit (nothing ignored or stray in the checkout helps) with that venv's python first on PATH."""
    src = tmp_path_factory.mktemp("src")
    listed = _run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT
    ).stdout.split("\0")
    for name in filter(None, listed):
        if (ROOT / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            (src / name).write_bytes((ROOT / name).read_bytes())
    venv = tmp_path_factory.mktemp("venv")
    _run([sys.executable, "-m", "venv", str(venv)])
    env = {
        **{k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV"}},
        "PATH": f"{venv / 'bin'}:{os.environ['PATH']}",
        "VIRTUAL_ENV": str(venv),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    commands = readme_install_commands()
    assert commands and all(c.startswith("python -m pip ") for c in commands), commands
    for command in commands:
        _run(["bash", "-c", command], cwd=src, env=env)
    (built,) = (src / "dist").glob("onnx_gate-*.whl")
    return built, venv / "bin" / "python"


@pytest.fixture(scope="module")
def wheel(installed: tuple[Path, Path]) -> Path:
    return installed[0]


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


def test_an_install_in_a_fresh_venv_loads_the_data_from_the_package(
    installed: tuple[Path, Path], tmp_path: Path
) -> None:
    _, python = installed
    venv = python.parent.parent
    probe = textwrap.dedent(
        """
        import json, sys
        import ci_onnx
        from ci_onnx import _data, matrix
        from ci_onnx.orchestration import scaffold
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


def test_the_installed_command_runs_away_from_the_checkout(
    installed: tuple[Path, Path], tmp_path: Path
) -> None:
    _, python = installed
    clean = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PYTHONHOME"}}
    command = str(python.parent / "onnx-gate")
    assert "Exit codes:" in _run([command, "--help"], cwd=tmp_path, env=clean).stdout
    _run([command, "init"], cwd=tmp_path, env=clean)
    assert (tmp_path / "onnx-gate.yml").is_file() and (tmp_path / ".github/workflows/onnx-gate.yml").is_file()


def test_the_installed_wheel_is_the_checkout_s_build(installed: tuple[Path, Path], tmp_path: Path) -> None:
    """The export cache and the reuse of the base's results key on onnx-gate's build: the wheel
    (its data inside the package) and the checkout it was built from (the data at the root) are one."""
    from ci_onnx.contracts.provenance import build_id

    _, python = installed
    clean = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PYTHONHOME"}}
    probe = "from ci_onnx.contracts.provenance import build_id; print(build_id())"
    done = _run([str(python), "-c", probe], cwd=tmp_path, env=clean)
    assert done.stdout.strip() == build_id()
