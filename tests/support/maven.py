"""A Maven repository on loopback, laid out as Maven Central is, for the android kind's releases.

It serves the recorded maven-metadata.xml of com.microsoft.onnxruntime:onnxruntime-android
(tests/data/maven, whose header says what it holds and how to refresh it) at the path Maven Central
has it, and any AARs given under their releases; it records every path asked for, and any other path
is a 404. Maven Central itself cannot be reached from here.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

from ci_onnx.host.resolve import maven_metadata_url

COORDINATE = "com.microsoft.onnxruntime:onnxruntime-android"
RECORDED = Path(__file__).resolve().parents[1] / "data" / "maven" / "onnxruntime-android-maven-metadata.xml"
AAR_PATH = "com/microsoft/onnxruntime/onnxruntime-android/{v}/onnxruntime-android-{v}.aar"


class _Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        self.server.asked.append(self.path)  # type: ignore[attr-defined]


@contextlib.contextmanager
def serve(
    root: Path, aars: dict[str, Path] | None = None, metadata: Path | None = RECORDED
) -> Iterator[tuple[str, list[str]]]:
    """A Maven repository at ``root`` holding ``metadata`` and ``aars`` (release → AAR file), served on
    127.0.0.1; yields its base URL (what $ONNX_GATE_MAVEN takes) and the list of paths asked for."""
    for release, aar in (aars or {}).items():
        dest = root / AAR_PATH.format(v=release)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(aar, dest)
    if metadata is not None:
        dest = root / maven_metadata_url(COORDINATE, "").lstrip("/")
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(metadata, dest)
    root.mkdir(parents=True, exist_ok=True)
    handler = functools.partial(_Handler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    asked: list[str] = []
    server.asked = asked  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", asked
    finally:
        server.shutdown()
        server.server_close()
