"""What ``onnx-gate init`` writes: a commented onnx-gate.yml and starter GitHub workflows.

The files are Jinja templates under templates/ with ``[[ ]]`` / ``[% %]`` delimiters, so the
``${{ }}`` expressions of GitHub workflows pass through untouched. The project's own self-test
workflow is rendered from the same templates (with ``uses: ./``), so what users get is what runs here.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from ci_onnx import _data, matrix
from ci_onnx.contracts.errors import UsageError
from ci_onnx.matrix import JobInfo, Step
from ci_onnx.plan import cijobs
from ci_onnx.report import CHECK_NAME

DEFAULT_ACTION = "onnx-gate/onnx-gate@v1"
"""The action as a workflow names it: ``owner/repo@ref``."""

PINNED = {
    "actions/checkout": ("d23441a48e516b6c34aea4fa41551a30e30af803", "v6.1.0"),
    "actions/upload-artifact": ("b7c566a772e6b6bfb58ed0dc250532a479d7789f", "v6.0.0"),
    "actions/download-artifact": ("37930b1c2abaa49bbe596cd826c3c89aef350131", "v7.0.0"),
    "actions/cache": ("27d5ce7f107fe9357f9df03efb73ab90386fccae", "v5.0.5"),
    "actions/setup-node": ("249970729cb0ef3589644e2896645e5dc5ba9c38", "v6.5.0"),
    "actions/setup-python": ("ece7cb06caefa5fff74198d8649806c4678c61a1", "v6.3.0"),
    "reactivecircus/android-emulator-runner": ("e89f39f1abbbd05b1113a29cf4db69e7540cae5a", "v2.37.0"),
    "actions/upload-pages-artifact": ("fc324d3547104276b827a68afc52ff2a11cc49c9", "v5.0.0"),
    "actions/deploy-pages": ("cd2ce8fcbc39b97be8ca5fce6e763baed58fa128", "v5.0.0"),
}
"""Every third-party action the workflows use, pinned to a full commit (a tag can be moved); the tag
it was taken from stays in a comment, which is what Dependabot reads to propose updates."""


def uses(action: str) -> str:
    """``owner/repo@<sha> # tag``, the value of a pinned ``uses:``."""
    sha, tag = PINNED[action]
    return f"{action}@{sha} # {tag}"


CONFIG_FILE = "onnx-gate.yml"
WORKFLOWS = Path(".github/workflows")
SELF_TEST = WORKFLOWS / "self-test.yml"
EXAMPLE_CONFIG = "examples/tinycnn/onnx-gate.yml"


@dataclasses.dataclass(frozen=True)
class Settings:
    """What the starter files are written for."""

    action: str = DEFAULT_ACTION
    config: str = CONFIG_FILE
    name: str = "onnx-gate"
    branches: tuple[str, ...] = ("main",)
    cron: str = "17 3 * * *"
    self_test: bool = False
    android: bool = False
    """Whether the config has android cells: the PR gate then gets the verify-android job."""

    @property
    def jobs(self) -> tuple[str, ...]:
        """The optional jobs of runners.toml's [jobs] these workflows get."""
        return ("android",) if self.android else ()

    composite: bool = False
    """Every job through the composite action (runner/), which installs onnx-gate from the action's
    checkout: no image to pull, so it works before and without the release's public images."""

    @property
    def local(self) -> bool:
        """``uses: ./``: the action comes from the checked-out repository, so every job checks out."""
        return self.action.startswith("./")

    def _sub_action(self, folder: str) -> str:
        if self.local:
            return self.action.rstrip("/") + "/" + folder
        repo, _, ref = self.action.partition("@")
        return f"{repo}/{folder}@{ref}"

    @property
    def runner_action(self) -> str:
        """The composite action in runner/ of the same repository and ref."""
        return self._sub_action("runner")

    @property
    def slim_action(self) -> str:
        """What every job but export uses: the torch-free container action in slim/, or the composite."""
        return self.runner_action if self.composite else self._sub_action("slim")

    @property
    def export_action(self) -> str:
        """What the export job uses: the container action with torch, or the composite."""
        return self.runner_action if self.composite else self.action

    @property
    def android_install(self) -> str:
        """What the android job pip-installs onnx-gate from: the checkout, or the action's repository."""
        if self.local:
            return self.action.rstrip("/") or "."
        repo, _, ref = self.action.partition("@")
        return f"git+https://github.com/{repo}@{ref}"

    def check(self) -> None:
        repo, at, ref = self.action.partition("@")
        if not self.local and (not at or not ref or repo.count("/") != 1):
            raise UsageError(f"--action {self.action!r}: expected owner/repo@ref, e.g. {DEFAULT_ACTION}")


@functools.cache
def _environment() -> object:
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(_data.templates_dir()),
        block_start_string="[%",
        block_end_string="%]",
        variable_start_string="[[",
        variable_end_string="]]",
        comment_start_string="[#",
        comment_end_string="#]",
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
        autoescape=False,
    )


def render(template: str, **context: object) -> str:
    import jinja2

    env = _environment()
    assert isinstance(env, jinja2.Environment)
    return env.get_template(template).render(**context)


def _flow(items: tuple[str, ...]) -> str:
    """A YAML flow sequence of quoted strings (JSON is valid YAML)."""
    return json.dumps(list(items))


@dataclasses.dataclass(frozen=True)
class StepView:
    """One declared step as the template writes it: comment lines, then (key, YAML value) pairs, a
    value being a scalar or, for ``with``/``env``, a list of (key, YAML scalar) pairs."""

    comment: tuple[str, ...]
    fields: tuple[tuple[str, object], ...]


@dataclasses.dataclass(frozen=True)
class JobView:
    """One verify job of runners.toml's [jobs], its strings rendered with the workflow's values."""

    info: JobInfo
    verify: str
    """The action its verify step uses; empty: its own steps do it."""
    timeout_minutes: int
    matrices: tuple[int, ...]
    comment: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    setup: tuple[StepView, ...]
    steps: tuple[StepView, ...]

    def id(self, n: int) -> str:
        return self.info.job_id(n)

    def output(self, n: int) -> str:
        return self.info.output_name(n)

    def count(self, n: int) -> str:
        return self.info.count_name(n)


def yaml_value(value: str, indent: int) -> str:
    """``value`` as a YAML scalar: plain where YAML reads it back as this string, else quoted; a
    value written over lines (a script) as a literal block indented by ``indent``."""
    if "\n" in value:  # a script: a literal block, whatever its length
        pad = " " * indent
        return "|\n" + "\n".join(pad + line if line else "" for line in value.strip("\n").split("\n"))
    from ruamel.yaml import YAML

    try:
        plain = YAML(typ="safe", pure=True).load(value) == value and ": " not in value and " #" not in value
    except Exception:  # not a plain scalar at all
        plain = False
    return value if plain and value == value.strip() else json.dumps(value)


def _step_view(step: Step, render_text: Callable[[str], str], indent: int = 10) -> StepView:
    fields: list[tuple[str, object]] = []
    for key, value in (("id", step.id), ("name", step.name), ("if", step.when)):
        if value:
            fields.append((key, yaml_value(render_text(value), indent)))
    if step.continue_on_error:
        fields.append(("continue-on-error", "true"))
    if step.uses:
        fields.append(("uses", uses(step.uses)))
    for key, table in (("with", step.with_), ("env", step.env)):
        if table:
            fields.append((key, [(k, yaml_value(render_text(v), indent + 2)) for k, v in table.items()]))
    if step.run:
        fields.append(("run", yaml_value(render_text(step.run), indent)))
    return StepView(tuple(step.comment.splitlines()), tuple(fields))


def verify_jobs(settings: Settings, context: dict[str, object]) -> list[JobView]:
    """The verify jobs the workflows write, from runners.toml's [jobs]: every job but an optional
    one nobody asked for (``init --android``)."""
    env = _environment()

    def render_text(text: str) -> str:
        return env.from_string(text).render(**context)  # type: ignore[attr-defined]

    action = {"slim": settings.slim_action, "runner": settings.runner_action, "steps": ""}
    views = []
    for name, job in matrix.jobs().items():
        if job.optional and name not in settings.jobs:
            continue
        views.append(
            JobView(
                info=job,
                verify=action[job.verify],
                timeout_minutes=job.timeout_minutes,
                matrices=tuple(range(1, job.matrices + 1)),
                comment=tuple(job.comment.splitlines()),
                env=tuple((k, yaml_value(render_text(v), 8)) for k, v in job.env.items()),
                setup=tuple(_step_view(s, render_text) for s in job.setup),
                steps=tuple(_step_view(s, render_text) for s in job.steps),
            )
        )
    return views


def workflow(template: str, settings: Settings, name: str | None = None) -> str:
    context: dict[str, object] = dict(
        action=settings.export_action,
        runner_action=settings.runner_action,
        slim_action=settings.slim_action,
        config=settings.config,
        name=name or settings.name,
        branches=_flow(settings.branches),
        cron=settings.cron,
        local=settings.local,
        self_test=settings.self_test,
        android_install=settings.android_install,
        comment_file=str(WORKFLOWS / f"{settings.name}-comment.yml"),
        check_name=CHECK_NAME,
        pin={name.removeprefix("actions/"): uses(name) for name in PINNED},
        plan_export_slots=cijobs.PLAN_EXPORT_SLOTS,
    )
    jobs = verify_jobs(settings, context)
    needs = ["plan", "export", *(j.id(n) for j in jobs for n in j.matrices)]
    return render(
        f"workflows/{template}",
        **context,
        verify_jobs=jobs,
        verify_matrices=[(j, n) for j in jobs for n in j.matrices],
        verify_needs=f"[{', '.join(needs)}]",
    )


RUNTIMES = ("1.20.1", "latest")
"""The releases the starter config names: an older one, and the newest on the index."""
ANDROID_RUNTIMES = ("1.22.0", "latest")
"""With android cells: an exact release both PyPI's onnxruntime and Maven's onnxruntime-android have
(Maven skips patch releases: it has 1.22.0, not 1.20.1), so no starter cell is an expected skip."""


def config_file(
    model_name: str = "model",
    factory: str = "model.py:build",
    onnx: str = "",
    android: bool = False,
    models: Sequence[str] = (),
) -> str:
    """onnx-gate.yml for a torch model (``factory``) or, with ``onnx``, for an ONNX file; ``android``
    adds the android runner's cells; ``models``: the ``models`` form, one block per name."""
    return render(
        "onnx-gate.yml.j2",
        model_name=Path(onnx).stem if onnx else model_name,
        factory=factory,
        onnx=onnx,
        models=list(models),
        runtimes=_flow(ANDROID_RUNTIMES if android else RUNTIMES),
        android=android,
    )


IGNORED = "onnx-gate-out/"
"""What every command writes, under the working directory: never committed."""


def starter_files(
    settings: Settings, fork_safe: bool = False, onnx: str = "", models: Sequence[str] = ()
) -> dict[Path, str]:
    """Relative path → content of every file ``onnx-gate init`` writes (.gitignore aside)."""
    settings.check()
    files = {Path(CONFIG_FILE): config_file(onnx=onnx, android=settings.android, models=models)}
    if fork_safe:
        files[WORKFLOWS / f"{settings.name}.yml"] = workflow("fork-untrusted.yml.j2", settings)
        files[WORKFLOWS / f"{settings.name}-comment.yml"] = workflow("fork-comment.yml.j2", settings)
    else:
        files[WORKFLOWS / f"{settings.name}.yml"] = workflow("pr-gate.yml.j2", settings)
    files[WORKFLOWS / f"{settings.name}-nightly.yml"] = workflow(
        "nightly.yml.j2", settings, name=f"{settings.name} nightly"
    )
    return files


def ignore_output(directory: Path) -> Path | None:
    """Add onnx-gate-out/ to ``directory``/.gitignore unless it is there; the file when it changed."""
    path = directory / ".gitignore"
    text = path.read_text() if path.is_file() else ""
    if any(line.strip() in (IGNORED, IGNORED.rstrip("/"), "/" + IGNORED) for line in text.splitlines()):
        return None
    path.write_text(text + ("" if not text or text.endswith("\n") else "\n") + IGNORED + "\n")
    return path


def self_test_workflow() -> str:
    """The project's own self-test: the PR gate on the example model, through ``uses: ./runner``,
    which installs onnx-gate from the pull request's checkout: the container actions pull the
    released images, which hold the last release's code, not the pull request's (ci.yml builds
    the images from the pull request and runs the example through them)."""
    settings = Settings(action="./", config=EXAMPLE_CONFIG, name="self-test", self_test=True, composite=True)
    return workflow("pr-gate.yml.j2", settings)


def write(directory: Path, files: dict[Path, str], force: bool = False) -> list[Path]:
    """Write ``files`` under ``directory``; existing files are an error unless ``force``."""
    existing = [directory / rel for rel in files if (directory / rel).exists()]
    if existing and not force:
        names = ", ".join(str(p) for p in existing)
        raise UsageError(f"{names}: already there; pass --force to overwrite, or remove them first")
    written = []
    for rel, content in files.items():
        path = directory / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
        written.append(path)
    return written


if __name__ == "__main__":
    # Regenerates the committed self-test workflow: python -m ci_onnx.orchestration.scaffold
    Path(sys.argv[1] if len(sys.argv) > 1 else SELF_TEST).write_text(self_test_workflow())
