"""Errors a user can act on. Each carries the exit code the CLI returns for it.

Exit codes: 0 the gate passed, 1 the gate failed, 2 bad usage or configuration,
3 an internal or environment error. Anything else that escapes is a bug in onnx-gate.
"""

from __future__ import annotations


class GateError(Exception):
    """Base of every error that is reported to the user as one line."""

    exit_code = 3

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ConfigError(GateError):
    """onnx-gate.yml (or another input file) is wrong; the message names the file, line and key."""

    exit_code = 2


class UsageError(GateError):
    """The command line is wrong: an unknown target id, a missing bundle, a bad option."""

    exit_code = 2


class BundleError(UsageError):
    """A bundle is missing, incomplete or corrupted (a sha256 that does not match)."""


class EnvironmentProblem(GateError):
    """Something outside the user's input failed: a package index, a virtual environment, a subprocess."""

    exit_code = 3
