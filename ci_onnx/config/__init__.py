"""Load and validate onnx-gate.yml into a frozen Config.

The JSON Schema in ci_onnx/schemas/config.schema.json is the single place where keys and defaults
are declared: ``read`` validates against it (ci_onnx/config/validate.py), ``build`` fills the defaults
from it and types the result (ci_onnx/config/assemble.py, ci_onnx/config/model.py). A bad file gets
one line: ``onnx-gate.yml:12: export.opset: unknown key; did you mean 'opsets'?``. A file of several
models: ci_onnx/config/cascade.py.
"""

from __future__ import annotations

from pathlib import Path

from ci_onnx.config import guard
from ci_onnx.config.assemble import build, ledger
from ci_onnx.config.model import CiConfig, Config, ExportConfig, ModelConfig, TargetsConfig, VerifyConfig
from ci_onnx.config.validate import CONFIG_SCHEMA, key_location, read, schema
from ci_onnx.contracts.errors import ConfigError

__all__ = [
    "CONFIG_SCHEMA",
    "DEFAULT_NAME",
    "CiConfig",
    "Config",
    "ExportConfig",
    "ModelConfig",
    "TargetsConfig",
    "VerifyConfig",
    "build",
    "key_location",
    "ledger",
    "load",
    "parse",
    "read",
    "schema",
]

DEFAULT_NAME = "onnx-gate.yml"


def load(path: Path) -> Config:
    """Read, validate and type ``path``. Every problem is a ConfigError with file and line."""
    return parse(guard.read_text(path), path)


def parse(text: str, path: Path) -> Config:
    """The Config of the one model in ``text``; every problem, whatever its kind, is a ConfigError
    naming ``path``. A file of several models (``models``, ``include``): ci_onnx/config/cascade.py."""
    plain, doc = read(text, path)
    if "model" not in plain:
        raise ConfigError(
            f"{path}: holds several models (`models`/`include`), and this reads a file of one "
            "`model`; give the file of one model's block"
        )
    return build(plain, guard.Where((guard.Layer(path, doc, (), ("model",)),)), path)
