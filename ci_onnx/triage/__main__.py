"""``python -m ci_onnx.triage REQUEST.json OUT.json``: one triage in a process of its own, so that the
verify stage can bound it (``verify.triage_timeout_s``) and kill it past that, whatever it was doing."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from ci_onnx.contracts import serde


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2:
        print("usage: python -m ci_onnx.triage REQUEST.json OUT.json", file=sys.stderr)
        return 2
    from ci_onnx.triage import attach, run

    req = attach.request_from_json(json.loads(Path(args[0]).read_text()), base_env=dict(os.environ))
    Path(args[1]).write_text(serde.dumps(run.triage(req)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
