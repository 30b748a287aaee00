"""The GitHub Action's side of onnx-gate: action inputs become CLI arguments.

GitHub hands a container action its ``with:`` values as ``INPUT_<NAME>`` environment variables (the
composite action under ``runner/`` sets the same variables itself). Nothing from a workflow is ever
spliced into a shell script: ``python -m ci_onnx.action`` reads the variables at this edge, turns them
into an argument list for the ``onnx-gate`` command, and runs it in-process.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from ci_onnx.contracts.errors import EXIT_FAIL, EXIT_PASS, UsageError

COMMANDS = ("plan", "export", "verify", "reverify", "report", "nightly")

OPTIONS: dict[str, dict[str, str]] = {
    "plan": {
        "config": "--config",
        "only": "--only",
        "out": "--out",
        "baseline": "--baseline",
        "github-token": "--github-token",
    },
    "export": {
        "config": "--config",
        "only": "--only",
        "out": "--out",
        "cache-dir": "--cache-dir",
        "cache-key": "--cache-key",
    },
    "verify": {
        "bundle": "--bundle",
        "bundles": "--bundles",
        "target": "--target",
        "out": "--out",
        "config": "--config",
        "plan": "--plan",
        "timeout": "--timeout",
        "baseline": "--baseline",
        "github-token": "--github-token",
    },
    "reverify": {
        "plan": "--plan",
        "bundles": "--bundles",
        "out": "--out",
        "timeout": "--timeout",
    },
    "report": {
        "results": "--results",
        "plan": "--plan",
        "out": "--out",
        "github-token": "--github-token",
        "junit": "--junit",
        "check-name": "--check-name",
        "comment-key": "--comment-key",
        "baseline": "--baseline",
        "reverified": "--reverified",
    },
    "nightly": {
        "results": "--results",
        "plan": "--plan",
        "config": "--config",
        "out": "--out",
        "github-token": "--github-token",
        "state": "--state",
        "bundles": "--bundles",
        "labels": "--label",
    },
}
"""For each command, the action input that feeds each of its options. tests/unit keeps this table,
action.yml and the click commands in step."""

FIXED: dict[str, dict[str, str]] = {"plan": {"--format": "github"}}
"""Options the action sets itself: in a workflow the plan is always written to $GITHUB_OUTPUT."""

UNEXPOSED: dict[str, dict[str, str]] = {
    "plan": {
        "--explain": "a question a person asks at a terminal; a workflow's plan goes to $GITHUB_OUTPUT",
        "--all": "a workflow plans every model by leaving out `baseline` (the nightly and pushes do)",
    },
    "export": {
        "--jobs": "a job's exports use every CPU of its runner, as memory allows, as `onnx-gate export` does",
    },
    "verify": {
        "--python": "the action verifies in its own interpreter, where install-runtime put the runtime",
        "--jobs": "a verify job's targets use every core of its runner, as `onnx-gate run` does",
    },
    "reverify": {
        "--jobs": "a re-verification uses every core of its runner, as `onnx-gate run` does",
    },
    "report": {
        "--pr": "in a workflow_run job the pull-request input writes the event that report reads",
        "--publish": "the action always publishes when it has a token",
    },
    "nightly": {
        "--date": "the night's date is today's",
        "--dry-run": "a scheduled run either manages the issues or does nothing",
        "--fail-on-broken": "the tracking issue is the signal; a red scheduled run every night is noise",
    },
}
"""Options of a command that the action deliberately does not offer, and why."""

MULTI = frozenset({"only", "results", "junit", "labels", "target"})
"""Inputs that take several values, one per line (or separated by commas), each a repeated option."""

FLAGS = frozenset({"cache-key"})
"""Inputs that are true or false: true gives the option alone, false nothing."""

ACTION_ONLY = frozenset(
    {"command", "working-directory", "install-runtime", "pull-request", "head-sha", "python-version"}
)
"""Inputs that steer the action itself rather than an option of the command."""

SECRET = frozenset({"github-token"})


@dataclasses.dataclass(frozen=True)
class Inputs:
    """The action's inputs, as GitHub passed them (empty string: not given)."""

    values: Mapping[str, str]

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Inputs:
        """``INPUT_GITHUB-TOKEN`` (container actions) and ``INPUT_GITHUB_TOKEN`` both name github-token."""
        values: dict[str, str] = {}
        for key, value in environ.items():
            if key.startswith("INPUT_"):
                name = key.removeprefix("INPUT_").lower().replace("_", "-")
                if value.strip() or name not in values:
                    values[name] = value.strip()
        return cls(values)

    def get(self, name: str) -> str:
        return self.values.get(name, "")

    def flag(self, name: str, default: bool) -> bool:
        raw = self.get(name).lower()
        if not raw:
            return default
        if raw in ("true", "1", "yes"):
            return True
        if raw in ("false", "0", "no"):
            return False
        raise UsageError(f"input {name}: {raw!r} is not true or false")

    @property
    def command(self) -> str:
        command = self.get("command")
        if command not in COMMANDS:
            raise UsageError(
                f"input command: {command!r} is not one of {', '.join(COMMANDS)}; set `with: command: plan`"
            )
        return command


def split_multi(value: str) -> list[str]:
    return [part.strip() for line in value.splitlines() for part in line.split(",") if part.strip()]


def to_argv(inputs: Inputs) -> list[str]:
    """The ``onnx-gate`` arguments for these inputs. An input the command does not take is an error."""
    command = inputs.command
    options = OPTIONS[command]
    unused = sorted(
        name
        for name, value in inputs.values.items()
        if value and name not in options and name not in ACTION_ONLY and name not in SECRET
    )
    if unused:
        takes = ", ".join(options)
        raise UsageError(
            f"input {unused[0]}: `{command}` does not take it (it takes {takes}); remove it from `with:`"
        )
    argv = [command]
    for option, value in FIXED.get(command, {}).items():
        argv += [option, value]
    for name, option in options.items():
        value = inputs.get(name)
        if not value:
            continue
        if name in FLAGS:
            argv += [option] if inputs.flag(name, default=False) else []
            continue
        for item in split_multi(value) if name in MULTI else [value]:
            argv += [option, item]
    return argv


def redact(argv: list[str]) -> list[str]:
    """``argv`` fit for a log line: secret values replaced."""
    secret_options = {opt for cmd in OPTIONS.values() for name, opt in cmd.items() if name in SECRET}
    return ["***" if i and argv[i - 1] in secret_options else a for i, a in enumerate(argv)]


def verdict(exit_code: int) -> str:
    """The ``verdict`` output: pass (0), fail (1), or error (bad usage, environment, a bug)."""
    return {EXIT_PASS: "pass", EXIT_FAIL: "fail"}.get(exit_code, "error")
