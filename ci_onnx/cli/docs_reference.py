"""The documentation site's generated pages, from the code they describe.

One command regenerates every one of them, and ``tests/unit/test_docs_site.py`` fails when a page
drifts from its source:

- ``docs/reference/cli.md``: the command table, from the click commands (ci_onnx.cli.reference);
- ``docs/reference/configuration.md``: the key table, from the config schema (ci_onnx.config.reference);
- ``docs/reference/action.md``: the inputs and outputs, from ``action.yml``, ``slim/action.yml`` and
  ``runner/action.yml``;
- ``docs/reference/exit-codes.md``: from ``ci_onnx.cli.EXIT_CODES``;
- ``docs/checks/index.md`` and the "Checks" navigation of ``mkdocs.yml``: from the check pages.

``python -m ci_onnx.cli.docs_reference`` lists the pages that drifted (exit 1 if any); ``--write``
rewrites them. Run it from the repository's root.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

from ci_onnx.cli import reference as cli_reference
from ci_onnx.config import reference as config_reference

ACTIONS = (("action.yml", "container"), ("slim/action.yml", "slim"), ("runner/action.yml", "composite"))
"""The three actions, by the name the table gives each."""

ACTION_BEGIN = "<!-- action-reference:begin (python -m ci_onnx.cli.docs_reference --write) -->"
ACTION_END = "<!-- action-reference:end -->"
NAV_BEGIN = "      # checks-nav:begin (python -m ci_onnx.cli.docs_reference --write)"
NAV_END = "      # checks-nav:end"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def action_reference(root: Path) -> str:
    """The inputs and outputs of the three actions, one row each, with the actions that have it."""
    from ruamel.yaml import YAML

    loaded = {name: YAML(typ="safe").load((root / path).read_text()) for path, name in ACTIONS}
    lines = [ACTION_BEGIN, "", "## Inputs", "", "| input | in | default | meaning |", "|---|---|---|---|"]
    names: dict[str, None] = {}
    for spec in loaded.values():
        names.update(dict.fromkeys(spec.get("inputs", {})))
    for name in names:
        where = [a for a, spec in loaded.items() if name in spec.get("inputs", {})]
        first = loaded[where[0]]["inputs"][name]
        default = first.get("default", "")
        shown = f"`{default}`" if default not in ("", None) else ""
        required = " (required)" if first.get("required") else ""
        lines.append(
            f"| `{name}` | {', '.join(where)} | {shown} | {_cell(first.get('description', ''))}{required} |"
        )
    lines += ["", "## Outputs", "", "| output | in | meaning |", "|---|---|---|"]
    outputs: dict[str, None] = {}
    for spec in loaded.values():
        outputs.update(dict.fromkeys(spec.get("outputs", {}) or {}))
    for name in outputs:
        where = [a for a, spec in loaded.items() if name in (spec.get("outputs") or {})]
        said = (loaded[where[0]]["outputs"][name] or {}).get("description", "")
        lines.append(f"| `{name}` | {', '.join(where)} | {_cell(said)} |")
    return "\n".join([*lines, "", ACTION_END])


def exit_codes() -> str:
    from ci_onnx.cli import EXIT_CODES

    lines = [
        "# Exit codes",
        "",
        "<!-- generated from ci_onnx.cli.EXIT_CODES by python -m ci_onnx.cli.docs_reference --write -->",
        "",
        "Every `onnx-gate` command exits with one of these (`onnx-gate --help` lists them too). The",
        "action's `verdict` output says `pass`, `fail` or `error` for the same outcomes.",
        "",
        "| code | meaning |",
        "|---:|---|",
        *(f"| `{code}` | {meaning} |" for code, meaning in EXIT_CODES),
        "",
    ]
    return "\n".join(lines)


_STAGE = re.compile(r"^\*\*Stage:\*\* (.+)$", re.M)
_TITLE = re.compile(r"^# (.+)$", re.M)


def _first_paragraph(text: str) -> str:
    """The first paragraph under the page's first second-level heading: what the check compares."""
    body = text.split("\n## ", 1)[1].split("\n", 1)[1].strip()
    return " ".join(body.split("\n\n", 1)[0].split())


def check_pages(root: Path) -> list[tuple[str, str, str, str]]:
    """(family, title, stage line, what it checks) for every page under docs/checks, sorted."""
    pages = []
    for path in sorted((root / "docs" / "checks").glob("*.md")):
        if path.stem == "index":
            continue
        text = path.read_text()
        title = _TITLE.search(text)
        stage = _STAGE.search(text)
        if title is None or stage is None:
            raise SystemExit(f"{path}: a check page starts with '# `name`' and a '**Stage:** …' line")
        pages.append((path.stem, title.group(1), stage.group(1), _first_paragraph(text)))
    return pages


def checks_index(root: Path) -> str:
    rows = [
        f"| [{title}]({family}.md) | {_cell(stage)} | {_cell(what)} |"
        for family, title, stage, what in check_pages(root)
    ]
    return "\n".join(
        [
            "# Checks",
            "",
            "<!-- generated from the pages beside this one by "
            "python -m ci_onnx.cli.docs_reference --write -->",
            "",
            "Every check onnx-gate can report has a page: what it compares, what a failure usually means,",
            "what to change, and an example. The pull request comment, the job summary and the terminal",
            "link each failing check to its page (`gate.docs_url` names the site).",
            "",
            "| check | stage and verdict | what it checks |",
            "|---|---|---|",
            *rows,
            "",
        ]
    )


def _plain(title: str) -> str:
    """A page title as a navigation label: no code marks, placeholders as an ellipsis."""
    return re.sub(r"<[^>]*>", "…", title.replace("`", ""))


def checks_nav(root: Path) -> str:
    entries = [f"      - {_plain(title)}: checks/{family}.md" for family, title, _, _ in check_pages(root)]
    return "\n".join([NAV_BEGIN, "      - All checks: checks/index.md", *entries, NAV_END])


def _spliced(path: Path, begin: str, end: str, block: str) -> str:
    text = path.read_text()
    if begin not in text or end not in text:
        raise SystemExit(f"{path}: the markers {begin!r} … {end!r} are missing")
    return config_reference.replace_block(text, begin, end, block)


def pages(root: Path) -> dict[Path, Callable[[], str]]:
    """Each generated file and how to make its whole text now."""
    docs = root / "docs"
    cli_page, config_page = docs / "reference" / "cli.md", docs / "reference" / "configuration.md"
    action_page = docs / "reference" / "action.md"
    return {
        cli_page: lambda: _spliced(cli_page, cli_reference.BEGIN, cli_reference.END, cli_reference.render()),
        config_page: lambda: _spliced(
            config_page, config_reference.BEGIN, config_reference.END, config_reference.render()
        ),
        action_page: lambda: _spliced(action_page, ACTION_BEGIN, ACTION_END, action_reference(root)),
        docs / "reference" / "exit-codes.md": exit_codes,
        docs / "checks" / "index.md": lambda: checks_index(root),
        root / "ci_onnx" / "schemas" / "config.schema.json": lambda: schema_enums(root),
        root / "mkdocs.yml": lambda: _spliced(root / "mkdocs.yml", NAV_BEGIN, NAV_END, checks_nav(root)),
    }


def schema_enums(root: Path) -> str:
    """config.schema.json with ``targets.providers`` and ``targets.runners`` enumerating the keys of
    matrix/providers.toml and matrix/runners.toml: a provider or a runner kind is one row there, and
    the schema (what validation accepts and editors complete) follows it here. Only those two enums
    are rewritten; the rest of the hand-written file is left as it is."""
    import functools
    import json

    from ci_onnx import matrix

    text = (root / "ci_onnx" / "schemas" / "config.schema.json").read_text()
    for key, names in (("providers", list(matrix.providers())), ("runners", list(matrix.runners()))):
        pattern = re.compile(rf'^(\s*"{key}": \{{.*?"items": \{{"enum": )\[[^\]]*\]', re.M)
        text, n = pattern.subn(functools.partial(_enum, json.dumps(names)), text, count=1)
        if n != 1:
            raise AssertionError(f"config.schema.json: no one-line targets.{key} with an items enum")
    return text


def _enum(listed: str, m: re.Match[str]) -> str:
    return m.group(1) + listed


def drifted(root: Path) -> list[Path]:
    """The generated files whose text is not what the code makes now."""
    return [p for p, make in pages(root).items() if not p.exists() or p.read_text() != make()]


def write(root: Path) -> list[Path]:
    changed = drifted(root)
    for path, make in pages(root).items():
        if path in changed:
            path.write_text(make())
    return changed


def main(argv: list[str]) -> int:
    root = Path.cwd()
    if argv[:1] == ["--write"]:
        for path in write(root):
            print(f"wrote {path.relative_to(root)}")
        return 0
    stale = drifted(root)
    for path in stale:
        print(f"{path.relative_to(root)} is out of date: python -m ci_onnx.cli.docs_reference --write")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
