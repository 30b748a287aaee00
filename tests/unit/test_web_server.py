"""The web runner's local server trusts no other process on the machine: every request must carry the
cell's secret (in the page URL only) and the server's own Host; the bundle serves only its listed
files and no link leads out of a served folder; no request line ends the server."""

from __future__ import annotations

import http.client
import json
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

NODE = shutil.which("node")
SERVER = Path(__file__).parents[1] / "support" / "web_server.mjs"
pytestmark = pytest.mark.skipif(NODE is None, reason="the web runner's server needs Node.js on PATH")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[dict[str, Any]]:
    from tests import bundles

    bundle = bundles.mlp_bundle(tmp_path / "bundle")
    (tmp_path / "secret.txt").write_text("not the page's")
    (bundle / "link").symlink_to(tmp_path / "secret.txt")
    (bundle / "unlisted.txt").write_text("not in manifest.files")
    dist = tmp_path / "modules" / "node_modules" / "onnxruntime-web" / "dist"
    dist.mkdir(parents=True)
    (dist / "ort.min.mjs").write_text("export const ok = 1;\n")
    (dist / "evil.mjs").symlink_to(tmp_path / "secret.txt")
    out = tmp_path / "out"
    out.mkdir()
    assert NODE is not None
    child = subprocess.Popen(
        [NODE, str(SERVER), str(bundle), str(out), str(tmp_path / "modules")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    first = json.loads(child.stdout.readline())
    port = int(first["url"].rsplit(":", 1)[1].strip("/"))
    try:
        yield {"port": port, "secret": first["secret"], "out": out, "child": child, "bundle": bundle}
    finally:
        assert child.stdin is not None
        child.stdin.close()
        try:
            child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()


def ask(s: dict[str, Any], method: str, path: str, *, host: str = "", body: bytes | None = None) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", s["port"], timeout=10)
    conn.putrequest(method, path, skip_host=True)
    conn.putheader("Host", host or f"127.0.0.1:{s['port']}")
    if body is not None:
        conn.putheader("Content-Length", str(len(body)))
    conn.endheaders(body)
    status = conn.getresponse().status
    conn.close()
    return status


def raw(s: dict[str, Any], data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", s["port"]), timeout=10) as sock:
        sock.sendall(data)
        try:
            return sock.recv(200)
        except (ConnectionResetError, TimeoutError):
            return b""


def test_a_request_without_the_cells_secret_is_refused(served: dict[str, Any]) -> None:
    secret = served["secret"]
    assert ask(served, "GET", f"/s/{secret}/bundle/manifest.json") == 200
    assert ask(served, "GET", f"/s/{secret}/config.json") == 200
    assert ask(served, "GET", "/bundle/manifest.json") == 403
    assert ask(served, "GET", "/config.json") == 403
    assert ask(served, "GET", f"/s/{'0' * len(secret)}/bundle/manifest.json") == 403
    assert ask(served, "GET", f"/s/{secret[:-1]}/bundle/manifest.json") == 403


def test_another_process_cannot_post_outputs_or_the_observation(served: dict[str, Any]) -> None:
    forged = json.dumps({"forged": "passed"}).encode()
    assert ask(served, "POST", "/observation", body=forged) == 403
    assert ask(served, "POST", "/s/bad/observation", body=forged) == 403
    assert ask(served, "POST", "/out/test_data_set_0/output_0.pb", body=b"x") == 403
    assert not list(served["out"].rglob("*"))
    assert ask(served, "POST", f"/s/{served['secret']}/observation", body=b'{"real": 1}') == 204
    served["child"].stdin.close()
    rest = served["child"].stdout.read()
    assert [json.loads(line) for line in rest.splitlines()] == [{"settled": '{"real": 1}'}]


def test_a_host_other_than_the_servers_is_refused(served: dict[str, Any]) -> None:
    path = f"/s/{served['secret']}/bundle/manifest.json"
    assert ask(served, "GET", path, host=f"evil.example:{served['port']}") == 403
    assert ask(served, "GET", path, host="localhost") == 403


def test_only_listed_bundle_files_and_no_link_out_of_a_served_folder(served: dict[str, Any]) -> None:
    s = f"/s/{served['secret']}"
    assert ask(served, "GET", f"{s}/bundle/model.onnx") == 200
    assert ask(served, "GET", f"{s}/bundle/test_data_set_0/input_0.pb") == 200
    assert ask(served, "GET", f"{s}/bundle/link") == 404
    assert ask(served, "GET", f"{s}/bundle/unlisted.txt") == 404
    assert ask(served, "GET", f"{s}/bundle/../secret.txt") == 404
    assert ask(served, "GET", f"{s}/bundle/%2e%2e/secret.txt") == 404
    assert ask(served, "GET", f"{s}/ort/ort.min.mjs") == 200
    assert ask(served, "GET", f"{s}/ort/evil.mjs") == 404
    assert ask(served, "GET", f"{s}/runner/page.mjs") == 200
    assert ask(served, "GET", f"{s}/runner/../../../../etc/passwd") == 404


@pytest.mark.parametrize(
    "line",
    [
        b"GET //[ HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /s/%zz/%ff HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET http://[::1:bad/ HTTP/1.1\r\n\r\n",
        b"\x00\xff\xfe garbage\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: x\r\n" + b"X: " + b"a" * 100_000 + b"\r\n\r\n",
        b"BREW /s/0/%00 HTCPCP/1.0\r\n\r\n",
    ],
)
def test_no_request_line_ends_the_server(served: dict[str, Any], line: bytes) -> None:
    raw(served, line)
    secret = served["secret"]
    assert ask(served, "GET", f"/s/{secret}/bundle/%00") in (403, 404)
    assert ask(served, "GET", f"/s/{secret}/bundle/manifest.json") == 200
    assert served["child"].poll() is None
