"""The plan for people (a table) and for GitHub (the step's outputs)."""

from __future__ import annotations

from pathlib import Path

from ci_onnx import matrix
from ci_onnx.plan.document import Plan
from ci_onnx.runners import session


def write_github_output(path: Path, outputs: dict[str, str]) -> None:
    """Append to $GITHUB_OUTPUT in the heredoc form, safe for any value."""
    with path.open("a") as fh:
        for key, value in outputs.items():
            delimiter = "ghadelim_onnx_gate"
            fh.write(f"{key}<<{delimiter}\n{value}\n{delimiter}\n")


def render_table(plan: Plan) -> str:
    rows = [("target", "runs on", "note")]
    for t in plan.targets:
        info = matrix.runners()[t.runner]
        where = f"{info.job_for(t.provider)}: " + ",".join(info.labels_for(t.provider))
        note = f"expected skip: {t.expected_skip}" if t.expected_skip else ""
        if t.runtime_spec:
            note = f"{t.runtime_spec} → {t.runtime}" + (f"; {note}" if note else "")
        own = info.presets_with(plan.options_for(t).engine_presets)
        if t.session_options != "default" and t.session_options in own:
            so = ", ".join(f"{k}={v}" for k, v in own[t.session_options].items())
            note = f"{t.runner} options {so}" + (f"; {note}" if note else "")
        elif t.session_options != "default":
            so = session.resolve(t.session_options, plan.options_for(t).session_presets).describe()
            note = f"session options {so}" + (f"; {note}" if note else "")
        if (m := plan.planned_model(t.model)) is not None and m.unchanged_since and not t.expected_skip:
            where, note = "(not re-run)", f"unchanged since {m.unchanged_since[:7]}: its result there stands"
        rows.append((t.id, where, note))
    widths = [max(len(r[i]) for r in rows) for i in range(2)]
    lines = [f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]}".rstrip() for r in rows]
    lines.insert(1, "-" * min(120, max(len(x) for x in lines)))
    n_skip = sum(1 for t in plan.targets if t.expected_skip)
    lines += [
        f"{m.id or m.name}: unchanged since {m.unchanged_since[:7]}, not re-run ({m.reuse})"
        if m.unchanged_since
        else f"{m.id or m.name}: {m.reuse}"
        for m in plan.models
        if m.reuse
    ]
    models = f" of {len(plan.models)} models" if len(plan.models) > 1 else ""
    from ci_onnx.plan import cijobs

    jobs = cijobs.verify_jobs(plan)
    lines.append(
        f"\n{len(plan.runnable)} target(s){models} to verify, {n_skip} expected skip(s), "
        f"{len(plan.bundle_keys())} bundle(s) to export; in CI {len(jobs)} verify job(s):"
    )
    lines.append(cijobs.describe(jobs))
    if plan.bundle_keys():
        lines.append(cijobs.export_layout(plan).describe())
    return "\n".join(lines)
