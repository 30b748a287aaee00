"""The composite twin act runs in place of the container action has the container action's interface
and entry point, so the act scenarios test what users run."""

from __future__ import annotations

import re
from pathlib import Path

from ruamel.yaml import YAML

from tests.act import harness
from tests.conftest import REPO


def test_the_twin_has_action_ymls_inputs_outputs_and_the_images_entry_point(tmp_path: Path) -> None:
    real = YAML(typ="safe").load((REPO / "action.yml").read_text())
    twin = YAML(typ="safe").load((harness.action_twin(tmp_path) / "action.yml").read_text())
    assert twin["inputs"] == real["inputs"]
    assert set(twin["outputs"]) == set(real["outputs"])
    (step,) = twin["runs"]["steps"]
    assert {f"INPUT_{n.upper().replace('-', '_')}" for n in real["inputs"]} <= set(step["env"])
    entry = re.search(r'ENTRYPOINT \["python", "-m", "([\w.]+)"\]', (REPO / "Dockerfile").read_text())
    assert entry and step["run"].endswith(f"-m {entry.group(1)}")


def test_every_github_action_the_workflows_use_has_a_stand_in() -> None:
    from ci_onnx import scaffold

    settings = scaffold.Settings()
    used: set[str] = set()
    for fork_safe in (False, True):
        for text in scaffold.starter_files(settings, fork_safe=fork_safe).values():
            used |= set(re.findall(r"uses: (actions/[\w-]+@\w+)", text))
    covered = set(harness.GITHUB_ACTIONS) | set(harness.BUILT_IN)
    assert used and used <= covered, used - covered
    for folder in harness.GITHUB_ACTIONS.values():
        assert (harness.STANDINS / folder / "action.yml").is_file()
