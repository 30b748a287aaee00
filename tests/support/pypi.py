"""A package index on loopback that speaks the simple repository API (PEP 503), for resolution tests."""

from __future__ import annotations

import contextlib
import html
import http.server
import os
import threading
from collections.abc import Iterator
from typing import ClassVar

from packaging.tags import sys_tags


def wheel_name(project: str, version: str, tag: str | None = None) -> str:
    """A real-looking wheel file name for this interpreter and platform (or for ``tag``)."""
    t = tag or str(next(iter(sys_tags())))
    return f"{project.replace('-', '_')}-{version}-{t}.whl"


class _Handler(http.server.BaseHTTPRequestHandler):
    files: ClassVar[dict[str, list[str]]] = {}

    def do_GET(self) -> None:
        parts = [p for p in self.path.split("?")[0].split("/") if p]
        if len(parts) == 2 and parts[0] == "simple" and parts[1] in self.files:
            links = "".join(
                f'<a href="/files/{html.escape(f)}#sha256={"0" * 64}">{html.escape(f)}</a>\n'
                for f in self.files[parts[1]]
            )
            body = f"<!DOCTYPE html><html><body>\n{links}</body></html>".encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
        else:
            body = b"not found"
            self.send_response(404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextlib.contextmanager
def serve(files: dict[str, list[str]]) -> Iterator[str]:
    """Serve ``files`` (project → wheel file names) on 127.0.0.1; yields the index URL."""
    handler = type("Handler", (_Handler,), {"files": files})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple/"
    finally:
        server.shutdown()
        server.server_close()


def pip_env(index_url: str) -> dict[str, str]:
    """The process environment with pip pointed at ``index_url`` alone (no config files, no find-links)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update({"PIP_INDEX_URL": index_url, "PIP_CONFIG_FILE": os.devnull, "PIP_NO_CACHE_DIR": "1"})
    return env
