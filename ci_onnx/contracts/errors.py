"""Errors a user can act on, and the exit codes: each error carries the one the CLI returns for it.

Exit codes (declared here once; the CLI, the action's entry point and the child processes use these):
0 the gate passed, 1 the gate failed, 2 bad usage or configuration, 3 an internal or environment
error. Anything else that escapes is a bug in onnx-gate.
"""

from __future__ import annotations

EXIT_PASS = 0
"""The gate passed: every target passed, or was expected not to work."""
EXIT_FAIL = 1
"""The gate failed: a check failed (or a target errored or is missing, in the report)."""
EXIT_USAGE = 2
"""Bad usage or configuration: the command line, onnx-gate.yml, a bundle (ConfigError, UsageError)."""
EXIT_INTERNAL = 3
"""An internal or environment error: a package index, a venv, a subprocess, or a bug."""
EXIT_INTERRUPTED = 130
"""Interrupted (Ctrl-C): 128 + SIGINT, as shells report it."""


class GateError(Exception):
    """Base of every error that is reported to the user as one line."""

    exit_code = EXIT_INTERNAL

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ConfigError(GateError):
    """onnx-gate.yml (or another input file) is wrong; the message names the file, line and key."""

    exit_code = EXIT_USAGE


class UsageError(GateError):
    """The command line is wrong: an unknown target id, a missing bundle, a bad option."""

    exit_code = EXIT_USAGE


class BundleError(UsageError):
    """A bundle is missing, incomplete or corrupted (a sha256 that does not match)."""


class EnvironmentProblem(GateError):
    """Something outside the user's input failed: a package index, a virtual environment, a subprocess."""

    exit_code = EXIT_INTERNAL
