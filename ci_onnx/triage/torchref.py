"""PyTorch as a reference, module by module: the model's own eager forward, with a forward hook on
every submodule, on the triaged sample. Runs where torch is, in a child process of its own (it runs
the model's code, with the allow-listed environment).

``python -m ci_onnx.triage.torchref --config onnx-gate.yml --inputs DIR --out DIR``

Writes each module's output (its first tensor) by module path, and its input (its first tensor
argument) by ``<path>`` + :data:`INPUT`, as ci_onnx.observer.triage writes values. The triage maps
each module to the ONNX values its nodes take in and hand on (dynamo's node metadata or TorchScript's
scoped node names say which module made a node), so the two can be compared on both sides of every
module: a node is blamed only where its inputs are known to agree.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ci_onnx.contracts.errors import EXIT_PASS, GateError

INPUT = "#input"
"""The suffix of a module's input among the values written (``b#input``)."""
FX_PREFIX = "fx:"
"""The prefix of an exported program's node among them (as ci_onnx.triage.graph.FX)."""


def module_outputs(
    cfg_path: Path, inputs: Path, model_id: str = "", fx: Mapping[str, str] | None = None
) -> dict[str, Any]:
    from ci_onnx.config import cascade
    from ci_onnx.export import factory, signature
    from ci_onnx.observer.triage import read_values

    cfg = cascade.load_one(cfg_path, model_id)
    if not cfg.model.factory:
        raise GateError(f"{cfg_path}: model.factory: the model is ONNX-only; there is no PyTorch reference")
    model = factory.build_model(cfg.model.factory, cfg.root)
    names = [s.name for s in cfg.model.inputs]
    binding = signature.bind(model.forward, names)
    feeds = read_values(inputs)
    seen = record(model, lambda leaves: binding.call(model, leaves), {n: feeds[n] for n in names})
    if fx:
        from ci_onnx.export.torch_export import flat_call

        seen.update(program_values(flat_call(model, binding, names), [feeds[n] for n in names], fx))
    return seen


def record(model: Any, call: Any, feeds: Mapping[str, Any]) -> dict[str, Any]:
    """Each submodule's output and input (their first tensors, the module's first call) by module
    path (``<path>`` + :data:`INPUT` for the input): ``call(tensors)`` runs the model's forward on
    ``feeds`` with hooks on every submodule."""
    import numpy as np
    import torch

    from ci_onnx.export import signature

    seen: dict[str, Any] = {}

    def hook(name: str) -> Any:
        def on_output(_module: Any, _args: Any, output: Any) -> None:
            first = next((t for t in signature.flatten(output) if isinstance(t, torch.Tensor)), None)
            if first is not None and name not in seen:  # a module called twice keeps its first call
                seen[name] = first.detach().cpu().numpy().copy()

        return on_output

    def pre_hook(name: str) -> Any:
        def on_input(_module: Any, args: Any) -> None:
            first = next((t for t in signature.flatten(args) if isinstance(t, torch.Tensor)), None)
            if first is not None and name + INPUT not in seen:
                seen[name + INPUT] = first.detach().cpu().numpy().copy()

        return on_input

    handles = [m.register_forward_hook(hook(n)) for n, m in model.named_modules() if n]
    handles += [m.register_forward_pre_hook(pre_hook(n)) for n, m in model.named_modules() if n]
    leaves = {n: torch.from_numpy(np.asarray(v, order="C").copy()) for n, v in feeds.items()}
    try:
        with torch.no_grad():
            call(leaves)
    finally:
        for h in handles:
            h.remove()
    return seen


def _same(recorded: str, made: str) -> bool:
    """Whether two renderings of an exported program's node are the same node (its users aside)."""
    return (
        re.sub(r"\[num_users=\d+\]", "", recorded).strip() == re.sub(r"\[num_users=\d+\]", "", made).strip()
    )


def program_values(flat: Any, leaves: Sequence[Any], wanted: Mapping[str, str]) -> dict[str, Any]:
    """The values of the exported program's nodes in ``wanted`` (name → the node as the ONNX graph
    recorded it; ``fx:<node>`` → array): the program torch.export makes of ``flat`` (as dynamo's
    exporter does), run node by node on ``leaves``; a node is recorded only where it is the same
    node (its target and arguments), since another export may number its nodes otherwise. Nothing
    where torch.export cannot export it here."""
    import numpy as np
    import torch

    tensors = tuple(torch.from_numpy(np.asarray(v, order="C").copy()) for v in leaves)
    try:
        program = torch.export.export(flat, tensors, strict=False)
    except Exception:  # the module outputs still stand as PyTorch's values
        return {}
    given = iter(tensors)
    args = []  # the lifted program's own inputs (its weights, buffers and constants, then ours)
    for spec in program.graph_signature.input_specs:
        if spec.kind.name == "USER_INPUT":
            args.append(next(given))
        else:
            args.append(program.state_dict.get(spec.target, program.constants.get(spec.target)))
    found: dict[str, Any] = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n: Any) -> Any:
            out = super().run_node(n)
            if n.name in wanted and isinstance(out, torch.Tensor) and _same(wanted[n.name], n.format_node()):
                found[FX_PREFIX + n.name] = out.detach().cpu().numpy().copy()
            return out

    with torch.no_grad():
        Recorder(program.graph_module).run(*args)
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ci_onnx.triage.torchref")
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("--model", default="", help="The model's name, in a config of several.")
    parser.add_argument("--inputs", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--fx", type=Path, help="JSON: the exported program's nodes to record (name → node).")
    args = parser.parse_args(argv)
    from ci_onnx.observer.triage import write_values

    try:
        fx = json.loads(args.fx.read_text()) if args.fx else {}
        write_values(args.out, module_outputs(args.config, args.inputs, args.model, fx))
    except GateError as exc:
        print(f"onnx-gate: error: {exc.message}", file=sys.stderr)
        return exc.exit_code
    return EXIT_PASS


if __name__ == "__main__":
    sys.exit(main())
