"""npm runs where no repository's .npmrc reaches it: a pull request cannot point `npm view` or
`npm install` at a registry of its own (npm reads the project .npmrc of its working directory)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ci_onnx.host import resolve
from ci_onnx.runners import npm

FAKE_NPM = """#!/bin/sh
# Stands in for npm's rule: a .npmrc in the working directory or above it is the project's config.
d="$PWD"
while [ "$d" != / ]; do
  if [ -f "$d/.npmrc" ]; then echo "npm obeyed $d/.npmrc" >&2; exit 9; fi
  d=$(dirname "$d")
done
echo "$PWD" >> "{log}"
case "$1" in
  view) echo '["1.0.0"]' ;;
  install) mkdir -p "$3/node_modules/pkg" && echo '{{"version": "1.0.0"}}' > "$3/node_modules/pkg/package.json" ;;
esac
"""


@pytest.fixture
def hostile_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, dict[str, str]]:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".npmrc").write_text("registry=http://attacker.invalid/\n")
    monkeypatch.chdir(repo)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "npm"
    fake.write_text(FAKE_NPM.format(log=tmp_path / "cwd.log"))
    fake.chmod(0o755)
    return tmp_path, {"PATH": f"{bin_dir}:/usr/bin:/bin"}


def test_npm_view_does_not_run_in_the_repository(hostile_repo: tuple[Path, dict[str, str]]) -> None:
    tmp, env = hostile_repo
    assert resolve._ask_npm("onnxruntime-node", env) == ["1.0.0"]
    assert "repo" not in (tmp / "cwd.log").read_text()


def test_npm_install_does_not_run_in_the_repository(hostile_repo: tuple[Path, dict[str, str]]) -> None:
    tmp, env = hostile_repo
    cache = tmp / "cache" / "npm" / "pkg-1.0.0"
    npm.install(cache, "pkg", "1.0.0", npm=str(tmp / "bin" / "npm"), environ=env, what="test")
    assert "repo" not in (tmp / "cwd.log").read_text()
