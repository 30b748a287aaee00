"""Only what changed: a model unchanged since the base commit is neither exported nor verified again.

Each model of a plan carries two digests (``PlannedModel``):

- ``export_key``: the export cache keys of its bundles (ci_onnx/export/cache.py: its sources,
  weights, samples, its config block, the tool versions), so that its bundles are the base's;
- ``fingerprint``: that, its targets (the resolved releases and expected skips) and its verify
  settings, so that its results are the base's.

With a baseline whose plan holds a model of the same name and fingerprint, a result for each of its
targets, and records of what its base exports read (ci_onnx/export/record.py) that still hold here
(every file hashes the same, every version is the same; checked without torch), the model is
*unchanged since* the base commit: the plan leaves it out of the export
and the verify jobs, and the report takes its results from the baseline and says so (``--all``
runs everything; a nightly always does). A model whose digests or records cannot be told or
checked always runs.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

from ci_onnx.config import Config
from ci_onnx.contracts import serde
from ci_onnx.export import record
from ci_onnx.plan import Plan, PlannedModel, onnx_opset
from ci_onnx.report.baseline import Baseline


def _digest(material: object) -> str:
    return hashlib.sha256(json.dumps(material, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def fingerprinted(plan: Plan, configs: Sequence[Config], exclude: Sequence[Path] = ()) -> Plan:
    """``plan`` with each model's export key and fingerprint; ``exclude``: directories never hashed
    (a run's output, the cache), as the export cache's own keys leave them out."""
    from ci_onnx.export import cache, parent

    by_id = {c.model.id: c for c in configs}
    models = []
    for m in plan.models:
        cfg = by_id.get(m.id)
        if cfg is None:
            models.append(m)
            continue
        try:
            keys = [
                cache.key_for(cfg, job, exclude=exclude).digest
                for job in parent.candidates(cfg, onnx_opset(cfg))
            ]
        except OSError:
            models.append(dataclasses.replace(m, export_key="", fingerprint=""))
            continue
        export_key = _digest(keys)
        cells = sorted((t.id, t.expected_skip) for t in plan.targets if t.model == m.id)
        # a run's own settings, and the config's path (a worktree of the base sits elsewhere), aside
        verify = serde.to_json(dataclasses.replace(m.verify, paired_bundles="", triage_config=""))
        fingerprint = _digest({"export": export_key, "targets": cells, "verify": verify})
        models.append(dataclasses.replace(m, export_key=export_key, fingerprint=fingerprint))
    return dataclasses.replace(plan, models=tuple(models))


def unchanged(plan: Plan, base: Baseline, configs: Sequence[Config]) -> Plan:
    """``plan`` with the models whose fingerprint ``base``'s plan holds too, whose every target has
    a result there, and whose every base export's record of what it read still holds (each file
    hashes the same, each version is the same), marked unchanged since the base commit; each model
    says why it is or is not (``PlannedModel.reuse``)."""
    roots = {c.model.id: record.repository_of(c.root) for c in configs}
    models = []
    for m in plan.models:
        ids = [t.id for t in plan.targets if t.model == m.id and not t.expected_skip]
        why = _why_not(m, ids, base, roots.get(m.id))
        if not why:
            since = base.commit or "the baseline"
            m = dataclasses.replace(m, unchanged_since=since, reuse=_evidence(base.records[m.id]))
        else:
            m = dataclasses.replace(m, reuse=f"re-run: {why}")
        models.append(m)
    return dataclasses.replace(plan, models=tuple(models))


def _why_not(m: PlannedModel, ids: Sequence[str], base: Baseline, root: Path | None) -> str:
    """Why ``m`` cannot take the base's results: "" when it can."""
    if not m.fingerprint:
        return "its export key cannot be told"
    if m.id not in base.fingerprints:
        return "the base's plan does not hold it"
    if base.fingerprints[m.id] != m.fingerprint:
        return "its config, targets or tool versions differ from the base's"
    if not ids or not all(i in base.results for i in ids):
        return "the base holds no result for some of its targets"
    records = base.records.get(m.id, ())
    if not records or root is None:
        return "the base results hold no record of what its export read"
    for read in records:
        reasons = record.changes(read, root)
        if reasons:
            return record.summary(reasons)
    return ""


def _evidence(records: Sequence[record.Record]) -> str:
    files = {f for r in records for f in r.files}
    dists = {d for r in records for d in r.distributions}
    return (
        f"nothing its export read changed: {len(files)} file(s) hash the same, "
        f"{len(dists)} distribution version(s) are the same"
    )
