"""The documentation site: it builds strictly, its generated pages follow the code, and every check
the code can emit has a page that a failing comment links to."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ci_onnx.cli import docs_reference
from ci_onnx.contracts import docs_links
from tests.conftest import REPO

DOCS = REPO / "docs"


def _strings(
    node: ast.AST | None, assigned: dict[str, list[ast.AST]], seen: frozenset[str] = frozenset()
) -> list[str]:
    """The check names an expression can take: a literal, the literal head of an f-string (up to its
    first placeholder it cannot resolve, ``parity[{name}]`` → ``parity[``), either side of a conditional, or a name's
    values assigned in the same module."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        head = ""
        for part in node.values:
            if isinstance(part, ast.FormattedValue):
                known = _strings(part.value, assigned, seen)
                if len(known) != 1 or known[0].startswith("<"):
                    break
                head += known[0]
            else:
                head += str(getattr(part, "value", ""))
        return [head] if head else [f"<{ast.unparse(node)}>"]
    if isinstance(node, ast.IfExp):
        return _strings(node.body, assigned, seen) + _strings(node.orelse, assigned, seen)
    if isinstance(node, ast.Name) and node.id in assigned and node.id not in seen:
        return [s for value in assigned[node.id] for s in _strings(value, assigned, seen | {node.id})]
    return [f"<{ast.unparse(node) if node is not None else '?'}>"]


def emitted_check_names(package: Path) -> set[str]:
    """Every first argument of a ``CheckResult(...)`` in ``package``, resolved as far as the source
    says: literals, f-string heads, and names assigned in the same module."""
    found: set[str] = set()
    for path in package.rglob("*.py"):
        tree = ast.parse(path.read_text())
        calls = [
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.Call) and getattr(n.func, "id", getattr(n.func, "attr", "")) == "CheckResult"
        ]
        if not calls:
            continue
        for call in calls:
            arg = (
                call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "name"), None)
            )
            assigned: dict[str, list[ast.AST]] = {}
            for n in ast.walk(tree):
                if isinstance(n, ast.Assign):
                    for t in n.targets:
                        if isinstance(t, ast.Name):
                            assigned.setdefault(t.id, []).append(n.value)
            found.update(_strings(arg, assigned))
    return found


def test_every_check_the_code_can_emit_has_a_page() -> None:
    names = emitted_check_names(REPO / "ci_onnx")
    literal = {n for n in names if not n.startswith("<")}
    assert {"parity[", "batch[", "sweep[", "reference-parity", "load", "provider"} <= literal
    from ci_onnx.contracts.target import DERIVED_PRECISIONS

    families = {docs_links.family(n) for n in literal | set(DERIVED_PRECISIONS)}
    missing = sorted(f for f in families if f not in docs_links.PAGES)
    assert not missing, f"checks without a page under docs/checks/: {missing}"
    # names the scan cannot resolve are few and known: each is a name handed in by a caller (a check
    # being copied, a derived precision, a check the export did not run: writer.CHECKS)
    unresolved = {n for n in names if n.startswith("<")}
    assert unresolved <= {"<check.name>", "<graph_check.name>", "<precision>", "<name>"}, unresolved
    from ci_onnx.export.writer import CHECKS

    assert not [c for c in CHECKS if docs_links.family(c) not in docs_links.PAGES]


def test_the_scan_resolves_names_and_f_strings(tmp_path: Path) -> None:
    """Guards the test above against passing on nothing."""
    (tmp_path / "m.py").write_text(
        'CHECK = "optimized-cache"\n'
        "def f(n, name=None):\n"
        '    name = f"sweep[{n}]"\n'
        '    return [CheckResult(CHECK, 1), CheckResult(name, 1), CheckResult(f"budget[{n}]", 1), CheckResult("load")]\n'
    )
    assert emitted_check_names(tmp_path) == {"optimized-cache", "sweep[", "budget[", "load"}


def test_each_page_is_a_file_and_each_file_a_page() -> None:
    files = {p.stem for p in (DOCS / "checks").glob("*.md")} - {"index"}
    assert files == set(docs_links.PAGES)


def test_a_check_links_to_its_family_page() -> None:
    site = "https://example.org/gate/"
    assert docs_links.page_url("parity[logits]", site) == "https://example.org/gate/checks/parity/"
    assert docs_links.page_url("int8-static", site) == "https://example.org/gate/checks/precision/"
    assert docs_links.page_url("pytest::test_x", site) == "https://example.org/gate/checks/"
    assert docs_links.page_url("decision", "https://example.org/x) [y](z") == ""


def test_the_sites_url_is_the_default_docs_url() -> None:
    from ci_onnx.contracts import defaults

    site_url = re.search(r"^site_url: (\S+)$", (REPO / "mkdocs.yml").read_text(), re.M)
    assert site_url is not None
    assert defaults.of("gate.docs_url") == site_url.group(1)


def test_generated_pages_have_not_drifted() -> None:
    assert docs_reference.drifted(REPO) == [], "run `python -m ci_onnx.cli.docs_reference --write`"


def test_a_drifted_page_is_found(tmp_path: Path) -> None:
    for rel in ("docs", "mkdocs.yml", "action.yml", "slim", "runner", "ci_onnx/schemas"):
        src = REPO / rel
        if src.is_dir():
            shutil.copytree(src, tmp_path / rel)
        else:
            shutil.copy(src, tmp_path / rel)
    assert docs_reference.drifted(tmp_path) == []
    page = tmp_path / "docs" / "reference" / "cli.md"
    page.write_text(page.read_text().replace("--no-cache", "--no-cachex"))
    assert docs_reference.drifted(tmp_path) == [page]
    docs_reference.write(tmp_path)
    assert docs_reference.drifted(tmp_path) == []
    # a provider is a row of matrix/providers.toml: the schema's enum that left it out has drifted
    schema = tmp_path / "ci_onnx" / "schemas" / "config.schema.json"
    schema.write_text(schema.read_text().replace('"enum": ["cpu", "openvino", ', '"enum": ["cpu", ', 1))
    assert docs_reference.drifted(tmp_path) == [schema]
    docs_reference.write(tmp_path)
    assert '"enum": ["cpu", "openvino", ' in schema.read_text()


def test_the_readme_stays_short_and_its_install_block_is_the_getting_started_one() -> None:
    readme = (REPO / "README.md").read_text()
    assert len(readme.encode()) <= 15_500, "the README is the front door; the manual is docs/"
    block = readme.split("<!-- install:begin", 1)[1].split("<!-- install:end -->", 1)[0]
    assert block.split("\n", 1)[1] in (DOCS / "getting-started.md").read_text()


def build_site(out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": "/usr/bin:/bin", "NO_MKDOCS_2_WARNING": "1", "HOME": str(out.parent)},
    )


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    """No broken internal link or anchor, no page left out of the navigation (mkdocs.yml's
    validation settings make each a warning, --strict makes a warning fail); nothing is fetched."""
    pytest.importorskip("mkdocs", reason="mkdocs is in the dev extra: pip install -e '.[dev]'")
    done = build_site(tmp_path / "site")
    assert done.returncode == 0, done.stdout + done.stderr
    for family in docs_links.PAGES:
        assert (tmp_path / "site" / "checks" / family / "index.html").is_file(), family


def test_a_broken_link_fails_the_strict_build(tmp_path: Path) -> None:
    """Guards the test above: the same build fails on a page with a link to nowhere."""
    pytest.importorskip("mkdocs", reason="mkdocs is in the dev extra: pip install -e '.[dev]'")
    root = tmp_path / "repo"
    shutil.copytree(DOCS, root / "docs")
    shutil.copy(REPO / "mkdocs.yml", root / "mkdocs.yml")
    (root / "docs" / "checks" / "parity.md").write_text("# `parity`\n\n[gone](nowhere.md)\n")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": "/usr/bin:/bin", "NO_MKDOCS_2_WARNING": "1", "HOME": str(tmp_path)},
    )
    assert done.returncode != 0
    assert "nowhere.md" in done.stdout + done.stderr
