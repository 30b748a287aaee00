"""PyTorch as a reference, module by module: the model's own eager forward, with a forward hook on
every submodule, on the triaged sample. Runs where torch is, in a child process of its own (it runs
the model's code, with the allow-listed environment).

``python -m ci_onnx.triage.torchref --config onnx-gate.yml --inputs DIR --out DIR``

Writes each module's output (its first tensor) by module path, and its input (its first tensor
argument) by ``<path>`` + :data:`INPUT`, as ci_onnx.triage.observe writes values. The triage maps
each module to the ONNX values its nodes take in and hand on (dynamo's node metadata or TorchScript's
scoped node names say which module made a node), so the two can be compared on both sides of every
module: a node is blamed only where its inputs are known to agree.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ci_onnx.errors import EXIT_PASS, GateError

INPUT = "#input"
"""The suffix of a module's input among the values written (``b#input``)."""


def module_outputs(cfg_path: Path, inputs: Path, model_id: str = "") -> dict[str, Any]:
    import numpy as np
    import torch

    from ci_onnx import cascade
    from ci_onnx.export import factory, signature
    from ci_onnx.triage.observe import read_values

    cfg = cascade.load_one(cfg_path, model_id)
    if not cfg.model.factory:
        raise GateError(f"{cfg_path}: model.factory: the model is ONNX-only; there is no PyTorch reference")
    model = factory.build_model(cfg.model.factory, cfg.root)
    names = [s.name for s in cfg.model.inputs]
    binding = signature.bind(model.forward, names)
    feeds = read_values(inputs)
    seen: dict[str, Any] = {}

    def hook(name: str) -> Any:
        def record(_module: Any, _args: Any, output: Any) -> None:
            first = next((t for t in signature.flatten(output) if isinstance(t, torch.Tensor)), None)
            if first is not None and name not in seen:  # a module called twice keeps its first call
                seen[name] = first.detach().cpu().numpy().copy()

        return record

    def pre_hook(name: str) -> Any:
        def record(_module: Any, args: Any) -> None:
            first = next((t for t in signature.flatten(args) if isinstance(t, torch.Tensor)), None)
            if first is not None and name + INPUT not in seen:
                seen[name + INPUT] = first.detach().cpu().numpy().copy()

        return record

    handles = [m.register_forward_hook(hook(n)) for n, m in model.named_modules() if n]
    handles += [m.register_forward_pre_hook(pre_hook(n)) for n, m in model.named_modules() if n]
    leaves = {n: torch.from_numpy(np.asarray(feeds[n], order="C").copy()) for n in names}
    try:
        with torch.no_grad():
            binding.call(model, leaves)
    finally:
        for h in handles:
            h.remove()
    return seen


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ci_onnx.triage.torchref")
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("--model", default="", help="The model's name, in a config of several.")
    parser.add_argument("--inputs", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    from ci_onnx.triage.observe import write_values

    try:
        write_values(args.out, module_outputs(args.config, args.inputs, args.model))
    except GateError as exc:
        print(f"onnx-gate: error: {exc.message}", file=sys.stderr)
        return exc.exit_code
    return EXIT_PASS


if __name__ == "__main__":
    sys.exit(main())
