"""Only what changed: a model unchanged since the base commit is neither exported nor verified again.

Each model of a plan carries two digests (``PlannedModel``):

- ``export_key``: the export cache keys of its bundles (ci_onnx/export/cache.py: its sources,
  weights, samples, its config block, the tool versions), so that its bundles are the base's;
- ``fingerprint``: that, its targets (the resolved releases and expected skips) and its verify
  settings, so that its results are the base's.

With a baseline whose plan holds a model of the same name and fingerprint, and a result for each of
its targets, the model is *unchanged since* the base commit: the plan leaves it out of the export
and the verify jobs, and the report takes its results from the baseline and says so (``--all``
runs everything; a nightly always does). A model whose digests cannot be told (a factory onnx-gate
cannot see into) always runs.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

from ci_onnx import serde
from ci_onnx.config import Config
from ci_onnx.plan import Plan, onnx_opset
from ci_onnx.report.baseline import Baseline


def _digest(material: object) -> str:
    return hashlib.sha256(json.dumps(material, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def fingerprinted(plan: Plan, configs: Sequence[Config], exclude: Sequence[Path] = ()) -> Plan:
    """``plan`` with each model's export key and fingerprint; ``exclude``: directories never hashed
    (a run's output, the cache), as the export cache's own keys leave them out."""
    from ci_onnx.export import cache, runner

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
                for job in runner.candidates(cfg, onnx_opset(cfg))
            ]
        except (cache.Uncacheable, OSError):
            models.append(dataclasses.replace(m, export_key="", fingerprint=""))
            continue
        export_key = _digest(keys)
        cells = sorted((t.id, t.expected_skip) for t in plan.targets if t.model == m.id)
        # a run's own settings, and the config's path (a worktree of the base sits elsewhere), aside
        verify = serde.to_json(dataclasses.replace(m.verify, paired_bundles="", triage_config=""))
        fingerprint = _digest({"export": export_key, "targets": cells, "verify": verify})
        models.append(dataclasses.replace(m, export_key=export_key, fingerprint=fingerprint))
    return dataclasses.replace(plan, models=tuple(models))


def unchanged(plan: Plan, base: Baseline) -> Plan:
    """``plan`` with the models whose fingerprint ``base``'s plan holds too, and whose every
    target has a result there, marked unchanged since the base commit."""
    models = []
    for m in plan.models:
        ids = [t.id for t in plan.targets if t.model == m.id and not t.expected_skip]
        same = bool(m.fingerprint) and base.fingerprints.get(m.id) == m.fingerprint
        if same and ids and all(i in base.results for i in ids):
            m = dataclasses.replace(m, unchanged_since=base.commit or "the baseline")
        models.append(m)
    return dataclasses.replace(plan, models=tuple(models))
