"""``onnx-gate triage``: triage one failing cell on demand, as verify does for every failing cell."""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path

import click

from ci_onnx.commands.options import default_cache_dir, finite, out_dir_option
from ci_onnx.contracts.errors import EXIT_FAIL, EXIT_PASS


@click.command()
@click.option(
    "--bundle",
    "bundle_dir",
    type=click.Path(path_type=Path, file_okay=False),
    required=True,
    help="The bundle the cell verified.",
)
@click.option(
    "--target", "target_id", required=True, metavar="ID", help="The target id, as `onnx-gate plan` lists it."
)
@out_dir_option("The run's output folder: reads results/<id>.json, writes triage/<id>/.")
@click.option(
    "--config",
    "config_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="onnx-gate.yml: its session presets, triage timeout, and the model factory (the PyTorch reference).",
)
@click.option(
    "--check",
    "check",
    default="",
    metavar="CHECK",
    help="The check to triage (parity[<output>] or decision); default: the result's first failing one.",
)
@click.option(
    "--python",
    "python",
    type=click.Path(path_type=Path, dir_okay=False),
    help="The interpreter of the target's environment (default: the cached one of its release).",
)
@click.option(
    "--timeout",
    "timeout_s",
    type=click.FloatRange(min=1, max=604_800),
    callback=finite,
    help="Seconds the triage may take (default: verify.triage_timeout_s).",
)
def triage(
    bundle_dir: Path,
    target_id: str,
    out: Path,
    config_path: Path | None,
    check: str,
    python: Path | None,
    timeout_s: float | None,
) -> None:
    """Where a failing cell first diverges, whose fault it is, and a minimal reproduction.

    \b
    Runs the cell's worst sample through the target's runtime (every intermediate exposed, with graph
    optimizations off and as it ran), onnx's ReferenceEvaluator and PyTorch (where torch and the model
    factory are here); writes <out>/triage/<id>/ (model.onnx, test_data_set_0/, reproduce.py, triage.json)
    and the result's `triage` object. Exit 0 when it named a fault class, 1 when it stopped short.
    """
    import onnxruntime

    from ci_onnx import matrix
    from ci_onnx.config import cascade
    from ci_onnx.contracts import defaults, proc, serde
    from ci_onnx.contracts.bundle import read_manifest
    from ci_onnx.contracts.errors import UsageError
    from ci_onnx.contracts.results import read_result, write_result
    from ci_onnx.contracts.target import Target
    from ci_onnx.runners import base, session
    from ci_onnx.runners.python import from_interpreter
    from ci_onnx.triage import attach, run
    from ci_onnx.verify import stage

    cfg = cascade.load_one(config_path, Target.from_id(target_id).model) if config_path else None
    target, options = stage.settings(target_id, cfg, None)
    base_env = proc.child_environment(os.environ)
    manifest = read_manifest(bundle_dir)
    result_path = out / stage.RESULTS / f"{target.id}.json"
    result = read_result(result_path) if result_path.is_file() else None
    chosen = _check(check, result, manifest)
    if python is not None:
        if target.runner != "python":
            raise UsageError(f"--python: target {target.id} runs on the {target.runner} runner, not Python")
        environment = from_interpreter(str(python))
    elif target.runner == "python" and onnxruntime.__version__ == target.runtime and target.provider == "cpu":
        environment = from_interpreter(sys.executable)  # the host's onnxruntime is the target's release
    else:  # the target's own environment, cached per release, as `onnx-gate run` makes it
        environment = base.provision(target, base.Provisioning(default_cache_dir(), base_env))
    ep = matrix.providers()[target.provider].ep
    req = attach.request(
        bundle_dir, target, chosen, out, environment=environment,
        providers=attach.providers_for(ep),
        preset=session.resolve(target.session_options, options.session_presets).settings(),
        release=result.ran_release() if result else target.runtime,
        timeout_s=timeout_s or options.triage_timeout_s or float(defaults.of("verify.triage_timeout_s")),
        torch_config=options.triage_config, base_env=base_env, limits=attach.limits_of(options),
    )  # fmt: skip
    found = attach.bounded(req, base_env)
    where = out / run.TRIAGE_DIR / target.id
    where.mkdir(parents=True, exist_ok=True)
    (where / "triage.json").write_text(serde.dumps(found))
    if result is not None:
        write_result(result_path.parent, dataclasses.replace(result, triage=found))
    click.echo(f"{target.id}: {found.summary or 'triage stopped: ' + found.stopped}")
    for row in found.path:
        click.echo(
            f"  {row.node:<40} {row.op_type:<18} max abs {row.max_abs:.3g}  {row.share:.3g}× the tolerance"
        )
    if found.reproduce:
        click.echo(f"  reproduce: {found.reproduce}  ({found.reproduction_bytes} bytes)")
    click.echo(f"  {where / 'triage.json'}")
    click.get_current_context().exit(EXIT_PASS if found.fault is not None else EXIT_FAIL)


def _check(check: str, result: object, manifest: object) -> tuple[str, str]:
    from ci_onnx.contracts.errors import UsageError
    from ci_onnx.triage import attach

    if check:
        if check.startswith("parity[") and check.endswith("]"):
            return check, check[len("parity[") : -1]
        decision = getattr(manifest, "decision", None)
        if check == "decision" and decision is not None:
            return check, decision.output
        raise UsageError(
            f"--check {check!r}: triage takes parity[<output>] or decision (with a verify.decision)"
        )
    found = attach.failing_check(result, manifest) if result is not None else None  # type: ignore[arg-type]
    if found is None:
        raise UsageError(
            "no failing parity or decision check to triage: verify the target first "
            "(onnx-gate verify … --out the same folder), or name one with --check"
        )
    return found
