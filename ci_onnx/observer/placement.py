"""Where every node ran, from what onnxruntime tells: assignment info, the profile trace, the verbose log.

Pure functions over plain data, so they are tested without a runtime. Runs inside a target
environment: stdlib only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from ci_onnx.contracts.results import PlacedNode, Placement

CPU = "CPUExecutionProvider"
_KERNEL = "_kernel_time"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def profile_nodes(events: Iterable[dict[str, Any]]) -> list[PlacedNode]:
    """One PlacedNode per node of an onnxruntime profile trace (``cat == "Node"``), time summed over runs."""
    by_name: dict[str, PlacedNode] = {}
    for e in events:
        if e.get("cat") != "Node" or not str(e.get("name", "")).endswith(_KERNEL):
            continue
        args = e.get("args") or {}
        provider = args.get("provider")
        if not provider:
            continue
        name = str(e["name"])[: -len(_KERNEL)]
        seen = by_name.get(name)
        dur = float(e.get("dur", 0.0))
        if seen is None:
            by_name[name] = PlacedNode(name, str(args.get("op_name", "")), str(provider), dur)
        else:
            by_name[name] = PlacedNode(name, seen.op_type, seen.provider, seen.time_us + dur)
    return list(by_name.values())


def summarise(
    requested: str,
    profiled: Sequence[PlacedNode],
    assigned: Sequence[tuple[str, str, str]] | None,
) -> Placement:
    """Combine the profile with assignment info ``(provider, node name, op type)`` where the runtime has it.

    Assignment info names the original nodes, also those an accelerator compiled into one fused
    subgraph; the profile holds the time, per kernel actually run. Nodes that ran on a CPU kernel
    but that assignment info does not list (it omits some on recent releases) are counted from the
    profile, so no CPU node is missed.
    """
    time_by_provider: dict[str, float] = {}
    for n in profiled:
        time_by_provider[n.provider] = time_by_provider.get(n.provider, 0.0) + n.time_us
    cpu_time = {n.name: n.time_us for n in profiled if n.provider == CPU}
    if assigned is not None:
        nodes = [PlacedNode(name, op, provider, cpu_time.get(name, 0.0)) for provider, name, op in assigned]
        listed = {n.name for n in nodes}
        nodes += [n for n in profiled if n.provider == CPU and n.name not in listed]
        source = "assignment-info"
    else:
        nodes = list(profiled)
        source = "profile"
    counts: dict[str, int] = {}
    for n in nodes:
        counts[n.provider] = counts.get(n.provider, 0) + 1
    fallback = (
        tuple(sorted((n for n in nodes if n.provider == CPU), key=lambda n: -n.time_us))
        if requested != CPU
        else ()
    )
    return Placement(
        source=source,
        nodes_by_provider=dict(sorted(counts.items())),
        time_us_by_provider=dict(sorted(time_by_provider.items())),
        fallback_nodes=fallback,
    )


_PLACED_ON = re.compile(r"(All nodes|Node\(s\)) placed on \[(?P<ep>[^\]]+)\]\. Number of nodes: (?P<n>\d+)")
_NODE_LINE = re.compile(r"\]\s{2,}(?P<op>[^\s()]+) \((?P<name>[^)]*)\)\s*$")


def verbose_log_nodes(log: str) -> tuple[dict[str, int], list[tuple[str, str, str]]]:
    """Node counts per provider and ``(provider, node name, op type)`` from onnxruntime's verbose log.

    The "Node placements" section (log_severity_level=0) lists, per provider, either
    ``All nodes placed on [EP]. Number of nodes: N`` or ``Node(s) placed on [EP]. Number of nodes: N``
    followed by one ``OpType (node name)`` line per node.
    """
    counts: dict[str, int] = {}
    nodes: list[tuple[str, str, str]] = []
    current = ""
    for line in _ANSI.sub("", log).splitlines():
        m = _PLACED_ON.search(line)
        if m:
            current = m["ep"]
            counts[current] = counts.get(current, 0) + int(m["n"])
            continue
        n = _NODE_LINE.search(line) if current and "VerifyEachNodeIsAssignedToAnEp" in line else None
        if n:
            nodes.append((current, n["name"], n["op"]))
        elif "VerifyEachNodeIsAssignedToAnEp" not in line:
            current = ""
    return counts, nodes


def from_verbose_log(requested: str, log: str) -> Placement | None:
    counts, nodes = verbose_log_nodes(log)
    if not counts:
        return None
    fallback = (
        tuple(PlacedNode(name, op, ep) for ep, name, op in nodes if ep == CPU) if requested != CPU else ()
    )
    return Placement("verbose-log", dict(sorted(counts.items())), {}, fallback)
