"""Where a check's page is on the documentation site.

Every check the code can emit has a page under ``docs/checks/`` (what it compares, what a failure
usually means, what to change); the PR comment, the job summary and the terminal link each failing
check to it. A check's page is named by its family, the name without its bracket (``parity[logits]``
→ ``parity``); the derived precisions share one page. ``tests/unit/test_docs_site.py`` fails when a
check the code can emit has no page here, or a page here has no file.
"""

from __future__ import annotations

import re

PAGES = frozenset(
    {
        "accuracy",
        "batch",
        "budget",
        "bundle",
        "checker",
        "cold-start",
        "control-flow",
        "decision",
        "dynamic-axes",
        "engine-precision",
        "environment",
        "export",
        "fallback",
        "graph",
        "latency",
        "load",
        "memory",
        "missing",
        "opset",
        "optimized-cache",
        "outputs",
        "parity",
        "precision",
        "provider",
        "reference-parity",
        "run",
        "runner",
        "runtime",
        "stateful",
        "sweep",
        "train-mode",
    }
)
"""The families that have a page ``docs/checks/<family>.md``."""

_SAFE_URL = re.compile(r"https?://[A-Za-z0-9._~:/%@+-]+")
"""What a site URL may hold to stay one Markdown link target (no space, parenthesis or bracket)."""

ALIASES = {"fp16": "precision", "int8-dynamic": "precision", "int8-static": "precision"}
"""Checks named for what they are about rather than by a family of their own."""


def family(check: str) -> str:
    """The page a check belongs to: ``parity[logits]`` → ``parity``; ``int8-static`` → ``precision``."""
    name = check.split("[", 1)[0]
    return ALIASES.get(name, name)


def page_url(check: str, docs_url: str) -> str:
    """The URL of ``check``'s page on the site at ``docs_url`` (``gate.docs_url``, the project's site
    by default); the checks' index for a check without a page of its own (a JUnit case of another
    tool); "" where ``docs_url`` is not a plain http(s) URL, so no text can leave the link."""
    if not _SAFE_URL.fullmatch(docs_url):
        return ""
    base = docs_url.rstrip("/") + "/"
    name = family(check)
    return f"{base}checks/{name}/" if name in PAGES else f"{base}checks/"
