"""Import the user's model factory (``path/to/file.py:callable`` or ``package.module:callable``).

Every way this can go wrong is the user's to fix, so each is a ConfigError naming ``model.factory``.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ci_onnx.errors import ConfigError

KEY = "model.factory"


def check_path(spec: str, root: Path) -> None:
    """Fail fast, before a child process imports torch, when the factory's file does not exist."""
    target = spec.rpartition(":")[0]
    if (target.endswith(".py") or "/" in target) and not (root / target).is_file():
        raise ConfigError(
            f"{KEY}: {(root / target)} does not exist (from {spec!r}; paths are relative to the config)"
        )


def load_callable(spec: str, root: Path) -> Callable[[], Any]:
    """The callable ``spec`` names; a file path is relative to ``root`` (the config's directory)."""
    target, _, attr = spec.rpartition(":")
    if not target or not attr:
        raise ConfigError(
            f"{KEY}: {spec!r} is not of the form path/to/file.py:callable or package.module:callable"
        )
    if target.endswith(".py") or "/" in target:
        module = _import_file(root / target, spec)
    else:
        try:
            module = importlib.import_module(target)
        except SystemExit as exc:
            raise ConfigError(f"{KEY}: importing {target} called sys.exit({exc.code!r})") from None
        except ImportError as exc:
            raise ConfigError(f"{KEY}: cannot import module {target!r} ({exc}); is it installed?") from None
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ConfigError(f"{KEY}: {target} has no attribute {part!r} (from {spec!r})")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ConfigError(f"{KEY}: {spec!r} is not callable")
    return typing.cast(Callable[[], Any], obj)


def _import_file(path: Path, spec: str) -> Any:
    path = path.resolve()
    if not path.is_file():
        raise ConfigError(f"{KEY}: {path} does not exist (from {spec!r}; paths are relative to the config)")
    name = f"onnx_gate_factory_{path.stem}"
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise ConfigError(f"{KEY}: cannot import {path} as a Python module")
    module = importlib.util.module_from_spec(module_spec)
    sys.path.insert(0, str(path.parent))  # so the factory's own sibling imports work
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except SystemExit as exc:
        raise ConfigError(
            f"{KEY}: importing {path.name} called sys.exit({exc.code!r}); a factory must return"
        ) from None
    except Exception as exc:
        raise ConfigError(
            f"{KEY}: importing {path.name} raised {type(exc).__name__}: {_first_line(exc)}"
        ) from None
    return module


def build_model(spec: str, root: Path) -> Any:
    """Call the factory and put the module in eval mode; returns a ``torch.nn.Module``."""
    factory = load_callable(spec, root)
    import torch

    try:
        model = factory()
    except SystemExit as exc:
        raise ConfigError(
            f"{KEY}: {spec} called sys.exit({exc.code!r}); a factory must return a module"
        ) from None
    except Exception as exc:
        raise ConfigError(f"{KEY}: {spec} raised {type(exc).__name__}: {_first_line(exc)}") from None
    if not isinstance(model, torch.nn.Module):
        raise ConfigError(f"{KEY}: {spec} returned {type(model).__name__}, not a torch.nn.Module")
    return model.eval()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else "(no message)"
