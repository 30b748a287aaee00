"""Import the user's model factory (``path/to/file.py:callable`` or ``package.module:callable``).

Every way this can go wrong is the user's to fix, so each is a ConfigError naming ``model.factory``.
"""

from __future__ import annotations

import ast
import difflib
import importlib
import importlib.util
import sys
import typing
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ci_onnx.contracts.errors import ConfigError

if TYPE_CHECKING:
    from ci_onnx.config import Config

KEY = "model.factory"


def check(cfg: Config) -> None:
    """:func:`check_path` on ``cfg``'s factory, its errors naming the config's file and line."""
    if cfg.model.factory:
        from ci_onnx.config import key_location

        check_path(cfg.model.factory, cfg.root, where=key_location(cfg, "model", "factory"))


def check_path(spec: str, root: Path, where: str = KEY) -> None:
    """Fail fast, before anything imports torch or the factory (``plan`` calls it), when the factory's
    file does not exist, does not parse, or defines nothing by the callable's name: the file is read
    with ``ast``, never imported. ``where`` is ``path:line: model.factory`` where the caller knows it.
    A module form (``package.module:callable``) is left to the import: finding it may import a
    package that needs torch."""
    target, _, attr = spec.rpartition(":")
    if not (target.endswith(".py") or "/" in target):
        return
    path = root / target
    if not path.is_file():
        raise ConfigError(f"{where}: {path} does not exist (from {spec!r}; paths are relative to the config)")
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except SyntaxError as exc:
        raise ConfigError(f"{where}: {target}:{exc.lineno}: {exc.msg}") from None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{where}: cannot read {path} ({exc})") from None
    names = top_level_names(tree)
    head = attr.split(".")[0]
    if names is None or head in names:
        return
    near = difflib.get_close_matches(head, sorted(names), n=1, cutoff=0.6)
    hint = f"did you mean {near[0]!r}?" if near else f"it defines: {', '.join(sorted(names)) or 'nothing'}"
    raise ConfigError(f"{where}: {target} defines no {head!r}; {hint}")


def top_level_names(tree: ast.Module) -> set[str] | None:
    """What a module binds at its top level (functions, classes, assignments, imports), or None
    where it cannot be known without running it (a star import, a module ``__getattr__``)."""
    names: set[str] = set()
    for node in _top_level(tree.body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == "__getattr__":
                return None
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*":
                    return None
                names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                names.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def _top_level(body: list[ast.stmt]) -> list[ast.AST]:
    """The statements a module runs at import, with those inside if/try/with blocks (a factory
    defined under ``if TORCH_AVAILABLE:`` is still the module's)."""
    found: list[ast.AST] = []
    for node in body:
        found.append(node)
        if isinstance(node, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
            for block in (node.body, getattr(node, "orelse", []), getattr(node, "finalbody", [])):
                found.extend(_top_level(block))
            for handler in getattr(node, "handlers", []):
                found.extend(_top_level(handler.body))
    return found


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
