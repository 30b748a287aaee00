"""The documentation site in the real browser the web runner drives: a failing comment's link opens
the check's page, and a screenshot of it is kept as a test artifact (test-artifacts/docs/)."""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from ci_onnx.runners import web
from tests.conftest import REPO
from tests.golden import cases
from tests.unit.test_docs_site import build_site

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.browser,
]

ARTIFACTS = REPO / "test-artifacts" / "docs"


@contextlib.contextmanager
def serving(site: Path) -> Iterator[str]:
    """The built site over HTTP on 127.0.0.1, as GitHub Pages serves it (folder URLs → index.html)."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def _browser(*args: str, profile: Path) -> subprocess.CompletedProcess[str]:
    chromium = web.chromium(os.environ)
    return subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         f"--user-data-dir={profile}", *args],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_a_failing_comments_check_link_opens_its_page(tmp_path: Path) -> None:
    done = build_site(tmp_path / "site")
    assert done.returncode == 0, done.stdout + done.stderr
    failing = cases.versus_view().failures
    assert failing and failing[0].url, "the comment links its first failing check"
    linked = failing[0].url
    site_url = "https://onnx-gate.github.io/onnx-gate/"
    assert linked.startswith(site_url)
    with serving(tmp_path / "site") as local:
        url = local + linked.removeprefix(site_url)
        dom = _browser("--dump-dom", url, profile=tmp_path / "profile-1")
        assert dom.returncode == 0, dom.stderr
        family = linked.rstrip("/").rsplit("/", 1)[1]
        assert "<h1" in dom.stdout and family in dom.stdout
        assert "What it checks" in dom.stdout and "What to change" in dom.stdout
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shot = ARTIFACTS / f"check-{family}.png"
        taken = _browser(
            f"--screenshot={shot}", "--window-size=1280,900", url, profile=tmp_path / "profile-2"
        )
        assert taken.returncode == 0, taken.stderr
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
