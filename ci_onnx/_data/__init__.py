"""Where the declared data is: ``matrix/`` (TOML tables) and ``templates/`` (jinja2).

Both live at the repository root, as the design card lays the project out, and the wheel ships them
inside the package: pyproject.toml maps the packages ``ci_onnx._data.matrix`` and
``ci_onnx._data.templates`` onto those folders (setuptools package-dir), so an install has them
beside this module. A source checkout (``PYTHONPATH=checkout``, no install, or an editable one) has
them two levels up. The path is resolved first: the Python runner links the package into a temporary
folder, and the data must still be found from there.
"""

from __future__ import annotations

import functools
from pathlib import Path

from ci_onnx.contracts.errors import EnvironmentProblem

_HERE = Path(__file__).resolve().parent
_CHECKOUT = _HERE.parents[1]

MATRIX = "matrix"
TEMPLATES = "templates"


@functools.cache
def locate(name: str) -> Path:
    """The folder of declared data ``name`` (``matrix`` or ``templates``), installed or checked out."""
    installed = _HERE / name
    if installed.is_dir():
        return installed
    checkout = _CHECKOUT / name
    if checkout.is_dir() and (_CHECKOUT / "pyproject.toml").is_file():
        return checkout
    raise EnvironmentProblem(
        f"onnx-gate's declared data {name}/ is neither in the package ({installed}) nor in a source "
        f"checkout ({checkout}); reinstall onnx-gate from its wheel"
    )


def matrix_dir() -> Path:
    """The folder of matrix/*.toml: runtime capabilities, providers, runner kinds, presets."""
    return locate(MATRIX)


def templates_dir() -> Path:
    """The folder of templates/*.j2 (reports, onnx-gate.yml) and templates/workflows/*.j2."""
    return locate(TEMPLATES)
