"""What a config error adds to the validator's words, where a person's intent is plain: torch's dtype
names (``float`` is float32), and a number YAML read where a string was meant (``1.20`` is 1.2).
"""

from __future__ import annotations

from typing import Any

TORCH_DTYPES = {
    "float": "float32", "double": "float64", "half": "float16", "long": "int64", "int": "int32",
    "torch.float": "float32", "torch.float32": "float32", "torch.double": "float64",
    "torch.float64": "float64", "torch.half": "float16", "torch.float16": "float16",
    "torch.long": "int64", "torch.int64": "int64", "torch.int": "int32", "torch.int32": "int32",
    "torch.int8": "int8", "torch.uint8": "uint8", "torch.bool": "bool",
}  # fmt: skip
"""torch's dtype names (``torch.float`` is float32, not float64) → the name model.inputs takes."""


def wants_string(error: Any) -> bool:
    wanted = error.validator_value
    return wanted == "string" or (isinstance(wanted, list) and "string" in wanted)


def node_at(doc: Any, keys: list[str]) -> Any:
    node = doc
    for key in keys:
        if isinstance(node, dict):
            node = next((v for k, v in node.items() if str(k) == key), None)
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return None
    return node


def as_written(node: Any, value: float) -> str:
    """A number as the file writes it: ``1.20``, which YAML reads as 1.2 (ruamel keeps the width)."""
    width, prec = getattr(node, "_width", None), getattr(node, "_prec", None)
    if isinstance(value, float) and width and prec is not None and getattr(node, "_exp", None) is None:
        return f"{value:.{max(width - prec - 1, 0)}f}"
    return str(value)
